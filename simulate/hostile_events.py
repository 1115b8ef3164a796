"""What the hostile knobs add while a scenario plays out: survivors' transport errors about a dead peer, and
torchrun's failure table as api.py really fills it (the siblings it SIGTERMed are failures too).

Every draw here comes from the cluster's second generator (Cluster.hrng), so with the knobs off the scenario's
own draws, and so its files, are exactly what they were before the knobs existed.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from simulate import hostile_lines as H
from simulate.cluster import Job, Kind, glog


def survivors_report(job: Job, dead: int, t: datetime) -> None:
    """Healthy ranks on other nodes print NCCL's view of the dead peer within a second of its death: an IB work
    completion in error (status=12, retry exceeded), or the socket closed by the remote peer, then the
    ncclRemoteError c10d raises. Their clocks may well put this before the dead rank's own last line."""
    c, h = job.c, job.c.hrng
    node = c.node(dead)
    pool = [r for r in range(c.world_size) if c.node(r) != node] or [r for r in range(c.world_size) if r != dead]
    if not pool:
        return
    for s in h.sample(pool, min(len(pool), h.randint(2, 4))):
        on_ib = any("Using network IB" in ln.text for ln in job.rank(s).lines)
        if on_ib and h.random() < 0.7:
            warn = H.ib_completion(c, s, dead, 50000 + dead, roce=h.random() < 0.5)
        else:
            warn = H.closed_by_peer(c, s, dead, 40000 + dead)
        when = t + timedelta(seconds=h.uniform(0.05, 1.0))
        job.rank(s).add(when, warn, Kind.COLLATERAL)
        job.rank(s).extend(when + timedelta(milliseconds=5), H.nccl_remote_error(s, warn), Kind.COLLATERAL)


def agent_table(job: Job, node: int, first: int, code: int, why: str, t: datetime) -> list[str]:
    """torchrun on one node, as SubprocessContext._poll and ChildFailedError.format_msg print it: the siblings
    still running are SIGTERMed, captured again, and listed under Failures with exit code -15."""
    c = job.c
    g = glog(c.node_clock(node, t))
    api = "torch/distributed/elastic/multiprocessing/api.py"
    siblings = [r for r in c.ranks_on(node) if r != first]
    out = [f"W{g} 139871 {api}:897] Sending process {c.pids[r]} closing signal SIGTERM" for r in siblings]
    out += [f"E{g} 139871 {api}:869] failed (exitcode: {code}) local_rank: {c.local(first)} (pid: {c.pids[first]}) "
            "of binary: /usr/bin/python3",
            "Traceback (most recent call last):", '  File "/usr/local/bin/torchrun", line 8, in <module>',
            "    sys.exit(main())", "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: "]
    stamp, host = c.node_clock(node, t), c.host_name(node)
    root = H.failure_entry(0, stamp, host, first, c.local(first), code, c.pids[first], why)
    others = [H.failure_entry(i + 1, stamp, host, r, c.local(r), -15, c.pids[r], H.signal_why(-15, c.pids[r]))
              for i, r in enumerate(siblings)]
    title = "/workspace/train/main.py FAILED"
    width = min(60, max(len(x) for x in [title, *root, *(x for e in others for x in e)]))
    body = [x for e in others for x in e] or ["  <NO_OTHER_FAILURES>"]
    return [*out, "=" * width, title, "-" * width, "Failures:", *body, "-" * width,
            "Root Cause (first observed failure):", *root, "=" * width]
