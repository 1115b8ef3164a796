"""Open MPI's lost daemon: the node it names failed first (catalog mpi.daemon_lost).

Written from open-mpi/ompi orte/mca/errmgr/base/help-errmgr-base.txt [node-died]: "ORTE has lost communication
with a remote daemon.", then the HNP's daemon and node and the remote daemon and node, as mpirun prints them when
a node's orted connection drops. Under the Kubeflow MPI operator the launcher reaches each worker through
`kubectl exec`, which reports "command terminated with exit code 137" when the worker's container is killed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from firstfault.cli import main

_REPORT = ["command terminated with exit code 137",
           "-" * 74,
           "ORTE has lost communication with a remote daemon.",
           "",
           "  HNP daemon   : [[11377,0],0] on node trainjob-mpijob-0-launcher-ksczd",
           "  Remote daemon: [[11377,0],2] on node trainjob-mpijob-0-worker-1",
           "",
           "This is usually due to either a failure of the TCP network",
           "connection to the node, or possibly an internal failure of",
           "the daemon itself. We cannot recover from this failure, and",
           "therefore will terminate the job.",
           "-" * 74]


def test_the_node_whose_daemon_was_lost_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = [f"[1,{r}]<stdout>:step 120 loss 2.{r}1" for r in range(4)] + _REPORT
    (tmp_path / "launcher.log").write_text("\n".join(lines) + "\n")
    assert main(["diagnose", str(tmp_path / "launcher.log"), "--format", "json"]) == 0
    rc = json.loads(capsys.readouterr().out)["root_cause"]
    assert (rc["signature"], rc["rank"], rc["host"]) == ("mpi.daemon_lost", None, "trainjob-mpijob-0-worker-1")
