"""Ray's ActorDiedError names the dead actor's process and node; Ray Train's worker table numbers that process.

Formats from ray-project/ray: python/ray/exceptions.py ActorDiedError ("\\tclass_name: ", "\\tactor_id: ", then
when known "\\tpid: {cause.pid}", "\\tname: ", "\\tnamespace: ", "\\tip: {cause.node_ip_address}", then the error
message); python/ray/train/_internal/backend_executor.py's table ("- (node_id={id}, ip={ip}, pid={pid})
world_rank={i}, local_rank={l}, node_rank={n}"), printed by the trainer actor under Ray's "({name} pid=N, ip=A) "
prefix (python/ray/_private/worker.py print_worker_logs).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from firstfault.cli import main

TRAINER = "(TorchTrainer pid=609, ip=10.29.174.144) "


def _driver(dead: int) -> list[str]:
    lines = [f"{TRAINER}Started distributed worker processes: "]
    for rank in range(16):
        ip = "10.104.123.100" if rank < 8 else "10.110.22.68"
        lines.append(f"{TRAINER}- (node_id=08dc8115f2e8{rank // 8}, ip={ip}, pid={88790 + rank}) world_rank={rank}, "
                     f"local_rank={rank % 8}, node_rank={rank // 8}")
    ip = "10.104.123.100" if dead < 8 else "10.110.22.68"
    return [*lines, "Traceback (most recent call last):", '  File "/home/ray/train.py", line 201, in <module>',
            "    result = trainer.fit()",
            "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.",
            "\tclass_name: RayTrainWorker", "\tactor_id: 6c6b69d76fc234bae9e90df56cac10b0", f"\tpid: {88790 + dead}",
            "\tnamespace: 5e884a8-0000-4000-8000-9c9a42d247", f"\tip: {ip}",
            "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit "
            "detail: Worker unexpectedly exits with a connection error code 2. End of file."]


@pytest.mark.parametrize("dead", [3, 14])
def test_the_dead_actors_pid_and_address_are_its_rank_in_the_worker_table(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], dead: int) -> None:
    (tmp_path / "submitter.log").write_text("\n".join(_driver(dead)) + "\n")
    assert main(["diagnose", str(tmp_path), "--format", "json"]) == 0
    rc = json.loads(capsys.readouterr().out)["root_cause"]
    assert rc["rank"] == dead
