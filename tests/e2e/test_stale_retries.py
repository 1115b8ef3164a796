"""A start-up retry the job ran on after never says what ended it. c10d's TCPStore client prints "The client
socket has failed to connect to [host]:port (errno: 111 - Connection refused)" while it retries the rendezvous
store (torch/csrc/distributed/c10d/socket.cpp, SocketConnectOp::tryConnect: a warning, and the retry loop goes
on until the store's timeout); a job that then trains for an hour was not ended by it. When every later line is
a consequence (a Kubernetes pod deleted, torchrun's agent SIGTERMed), the answer is what the later lines say."""

from __future__ import annotations

from correlator.diagnose import diagnose
from scan.engine import default_matcher, scan_source

_AGENT = "torch/distributed/elastic/agent/server/api.py:704"
_PROCS = "torch/distributed/elastic/multiprocessing/api.py:897"


def _worker(rank: int, pid: int) -> str:
    return (f"[rank{rank}]:[W0203 12:47:4{rank % 10}.324227589 socket.cpp:755] [c10d] The client socket has failed "
            "to connect to [job-master-0]:29500 (errno: 111 - Connection refused).\n"
            f"W0203 13:43:30.216518 17 {_AGENT}] Received Signals.SIGTERM death signal, shutting down workers\n"
            f"W0203 13:43:30.216518 17 {_PROCS}] Sending process {pid} closing signal SIGTERM\n"
            "Traceback (most recent call last):\n"
            '  File "/usr/local/bin/torchrun", line 8, in <module>\n'
            "    sys.exit(main())\n"
            "torch.distributed.elastic.multiprocessing.api.SignalException: Process 17 got signal: 15\n")


def test_an_hour_old_connect_retry_is_context_not_the_cause() -> None:
    m = default_matcher()
    files = {f"pods/job-worker-{i}.log": _worker(4 * i + 4, 61181 + i) for i in range(3)}
    results = [scan_source(m, name, [text.encode()], 2026, i << 32) for i, (name, text) in enumerate(files.items())]
    d = diagnose(results, m.catalog)
    rc = d.root_cause
    assert rc is not None and rc.signature != "pytorch.store.connect_failed", rc
    stale = [e for e in d.timeline if e.signature == "pytorch.store.connect_failed"]
    assert stale and {e.role for e in stale} == {"context"}


def test_a_connect_failure_just_before_the_end_still_counts() -> None:
    m = default_matcher()
    text = ("[rank4]:[W0203 13:43:10.324227589 socket.cpp:755] [c10d] The client socket has failed to connect to "
            "[job-master-0]:29500 (errno: 111 - Connection refused).\n"
            f"W0203 13:43:30.216518 17 {_AGENT}] Received Signals.SIGTERM death signal, shutting down workers\n")
    d = diagnose([scan_source(m, "pods/job-worker-0.log", [text.encode()], 2026, 0)], m.catalog)
    assert d.root_cause is not None
    assert any(e.signature == "pytorch.store.connect_failed" and e.role != "context" for e in d.timeline)


# The retry warning as torch/csrc/distributed/c10d/socket.cpp prints it (SocketConnectOp: C10D_WARNING of "The
# client socket has failed to connect to [{}]:{} (errno: {} - {})."): torch 2.0/2.1's "[W socket.cpp:663]" and
# 2.3's glog-style prefix behind the "[rankN]:" tag; and ProcessGroupNCCL.cpp's watchdog line of a numbered
# collective ("Watchdog caught collective operation timeout: WorkNCCL(SeqNum=...)"), printed once the process
# group, built over that store, has run collectives.
def _retry(rank: int, old: bool, at: str = "12:47:41") -> str:
    prefix = "[W socket.cpp:663]" if old else f"[rank{rank}]:[W0203 {at}.324227589 socket.cpp:755]"
    return (f"{prefix} [c10d] The client socket has failed to connect to [store-node-0]:29500 "
            "(errno: 111 - Connection refused).\n")


def _watchdog(rank: int, at: str = "13:43:10") -> str:
    return (f"[rank{rank}]:[E0203 {at}.341808597 ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught "
            "collective operation timeout: WorkNCCL(SeqNum=18852, OpType=ALLREDUCE, NumelIn=6, NumelOut=6, "
            "Timeout(ms)=600000) ran for 600086 milliseconds before timing out.\n")


def test_a_start_up_retry_followed_by_collectives_is_not_the_cause() -> None:
    m = default_matcher()
    # ranks 1 and 2 retry the store at start-up, then the job runs 18,852 collectives and times out in one
    text = _retry(1, old=True) + _retry(2, old=False) + "".join(_watchdog(r) for r in (0, 1, 2, 3))
    d = diagnose([scan_source(m, "submitter.log", [text.encode()], 2026, 0)], m.catalog)
    assert d.root_cause is not None and d.root_cause.signature != "pytorch.store.connect_failed", d.root_cause
    retries = [e for e in d.timeline if e.signature == "pytorch.store.connect_failed"]
    assert retries and {e.role for e in retries} == {"context"}


def test_a_retry_after_which_nothing_ran_stays_the_cause() -> None:
    m = default_matcher()
    # the same retries, the last lines of their ranks: nothing shows the store ever answered
    text = _retry(1, old=True) + _retry(2, old=False)
    d = diagnose([scan_source(m, "submitter.log", [text.encode()], 2026, 0)], m.catalog)
    assert d.root_cause is not None and d.root_cause.signature == "pytorch.store.connect_failed", d.root_cause
    assert all(e.role != "context" for e in d.timeline if e.signature == "pytorch.store.connect_failed")


def test_a_retry_at_a_restart_after_the_job_had_run_stays_a_candidate() -> None:
    m = default_matcher()
    # collectives ran before the retry: an elastic restart's new rendezvous, whose store may be what failed
    text = _watchdog(0, at="13:43:10") + _retry(1, old=False, at="13:44:02") + _watchdog(3, at="13:54:03")
    d = diagnose([scan_source(m, "submitter.log", [text.encode()], 2026, 0)], m.catalog)
    assert any(e.signature == "pytorch.store.connect_failed" and e.role != "context" for e in d.timeline)

