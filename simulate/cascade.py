"""What every failing job has in common: start-up, training, then the cascade on the ranks that only react.

A scenario plants its cause and calls these for the consequences: survivors' watchdog timeouts ten minutes
later, ring neighbours losing their sockets to a dead process, torchrun's per-node failure tables, the scheduler's
exit codes, and (when the knobs ask) Flight Recorder dumps.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from simulate import hostile_events
from simulate import lines as L
from simulate.cluster import START, TIMEOUT, Cluster, Job, Kind


@dataclass(frozen=True)
class Knobs:
    world_size: int = 64
    max_skew_s: float = 300.0
    missing: float = 0.0  # share of the other ranks' logs that never arrive
    truncated: float = 0.0  # share of the other ranks' logs cut short (the last line broken mid-way)
    interleaved: bool = False  # every rank and node in one file, as a Slurm output file collects them
    flight_recorder: str | None = None  # "pickle" | "json": TORCH_NCCL_DUMP_ON_TIMEOUT=1 dumps
    desync_debug: bool = False  # TORCH_NCCL_DESYNC_DEBUG=1: rank 0 names the lagging ranks
    steps: int = 6  # training steps logged per rank before the failure
    cascade: str = "auto"  # after a rank dies: "abort" (NCCL errors in seconds), "timeout" (watchdog), or either
    noise: float = 0.0  # share of ranks that print harmless failure-looking lines (store retries, bad samples)
    job_file: bool = False  # write the scheduler's JobEvent (exit codes, rank -> host) as job.json beside the logs
    # Issue 22's patterns 1-5 (hostile.py). All off by default: an older scenario and seed writes the same bytes.
    local_prefix: str | None = None  # torchrun's console: "default" [default<local>]:, "role" [rank<local>]: (--role
    #   rank), "template" [rank<global>]: (TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE), "logdir" attempt_0/<local>/stderr.log
    failure_table: bool = True  # False: torchrun's ChildFailedError table never reached the collected logs
    aliases: str | None = None  # "slurm" | "aws" | "k8s": each tool names a node its own way (names.py)
    launcher_reports: bool = False  # srun's exit lines, node 0's first; torchrun's table lists the SIGTERMed siblings
    survivor_transport: bool = False  # healthy ranks print IB status=12 / closed by peer / ncclRemoteError
    silent_straggler: bool = False  # the straggler prints nothing; the others time out on a newer SeqNum


@dataclass
class Failure:
    """What a scenario planted: the answer a diagnosis should give, and the job's exit codes."""

    rank: int | None
    host: str | None
    hints: str  # |-separated substrings, one of which the reported signature id should contain
    exit_codes: dict[str, int] = field(default_factory=dict)
    second: tuple[int | None, str | None] | None = None  # an independent second failure, if any
    protect: set[int] = field(default_factory=set)  # ranks whose logs the knobs must not drop or cut


def fail_time(c: Cluster) -> datetime:
    return START + timedelta(minutes=40, seconds=c.rng.uniform(0, 30))


def start(job: Job, knobs: Knobs, t_fail: datetime, ib: bool = False,
          ifname: dict[int, tuple[str, str]] | None = None) -> None:
    """NCCL init on every rank, then a few training steps up to the failure."""
    c = job.c
    for r in range(c.world_size):
        shard = job.rank(r)
        name, addr = (ifname or {}).get(c.node(r), ("eth0", c.ip(r)))
        shard.extend(START + timedelta(seconds=20), L.nccl_init(c, r, name, addr, ib))
        for t, text in L.training(c, r, knobs.steps, t_fail):
            shard.add(t, text)
        if c.rng.random() < knobs.noise:
            kind = c.rng.randrange(3)
            t = START + timedelta(seconds=5) if kind == 0 else t_fail - timedelta(seconds=c.rng.uniform(5, 60))
            shard.add(t, L.noise(c, r, t, kind))


def neighbours(c: Cluster, rank: int) -> list[int]:
    """The rank's ring neighbours on other hosts: the ones whose sockets to it break when it dies."""
    out = []
    for step in (-1, 1, -c.gpus_per_node, c.gpus_per_node):
        other = (rank + step) % c.world_size
        if c.node(other) != c.node(rank) and other not in out:
            out.append(other)
    return out[:2]


def sockets_break(job: Job, dead: int, t: datetime) -> None:
    c = job.c
    for r in neighbours(c, dead):
        line = (L.reset_by_peer if c.rng.random() < 0.5 else L.closed_by_peer)(c, r, c.ip(dead), 40000 + dead)
        job.rank(r).add(t + timedelta(seconds=1 + c.rng.uniform(0, 0.5)), line, Kind.COLLATERAL)
    if job.knobs is not None and job.knobs.survivor_transport:
        hostile_events.survivors_report(job, dead, t)


def timeouts(job: Job, t_fail: datetime, seq: int, waiting: Iterable[int], knobs: Knobs,
             fast: bool = False, why: str = L.REMOTE) -> dict[int, datetime]:
    """Every waiting rank fails on collective #seq; returns when each one did.

    A hang (``fast`` False) fires every watchdog TIMEOUT after the failure, within a second or two of each other.
    A dead peer (``fast``) breaks the ring at once: ranks abort with an NCCL error as the break reaches them,
    seconds to a minute later, which is well inside a few minutes of clock skew.
    """
    c = job.c
    times: dict[int, datetime] = {}
    for r in waiting:
        if fast:
            t = t_fail + timedelta(seconds=c.rng.uniform(2, 60))
            job.rank(r).extend(t, L.watchdog_error(c, r, t, seq, why), Kind.COLLATERAL)
        else:
            t = t_fail + TIMEOUT + timedelta(seconds=c.rng.uniform(0, 2))
            job.rank(r).extend(t, L.watchdog(c, r, t, seq), Kind.COLLATERAL)
            if knobs.flight_recorder:
                flight_dump(job, r, seq, seq - 1, t, knobs.flight_recorder)
        times[r] = t
    return times


def agents(job: Job, t_fail: datetime, causes: dict[int, int], times: dict[int, datetime],
           others: int = -6) -> dict[str, int]:
    """torchrun on every node, and the exit codes the scheduler records.

    ``causes`` maps initiating ranks to their exit codes; their nodes report them first. Elsewhere the first rank
    to fail (``others``: -6, the watchdog's SIGABRT, by default) is what torchrun calls the root cause, and its
    siblings are SIGTERMed.
    """
    c = job.c
    codes: dict[str, int] = {}
    by_node = {c.node(r): r for r in causes}
    for node in range(c.nodes):
        ranks = c.ranks_on(node)
        timed = [r for r in ranks if r in times]
        if node in by_node:
            first, code, t = by_node[node], causes[by_node[node]], t_fail + timedelta(seconds=1)
        elif timed:
            first = min(timed, key=lambda r: times[r])
            code, t = others, times[first] + timedelta(seconds=1)
        else:
            continue
        why = L.why_exit(c, first, code)
        if job.knobs is not None and job.knobs.launcher_reports:
            text = hostile_events.agent_table(job, node, first, code, why, t)
        else:
            text = L.agent(c, node, first, code, why, t)
        job.node(node, "torchrun.log", "agent").extend(t, text)
        for r in ranks:
            codes[str(r)] = code if r == first else -15
    return codes


def flight_dump(job: Job, r: int, enqueued: int, completed: int, t: datetime, fmt: str,
                odd_op: str | None = None) -> None:
    """The Flight Recorder ring buffer of rank r, as TORCH_NCCL_DUMP_ON_TIMEOUT writes it."""
    c = job.c
    base = int((t - TIMEOUT).timestamp() * 1e9)
    entries: list[dict[str, Any]] = []
    for seq in range(max(1, enqueued - 4), enqueued + 1):
        state = "completed" if seq <= completed else "started"
        op = odd_op if (odd_op and seq == enqueued) else "nccl:all_reduce"
        entries.append({
            "frames": [{"name": "all_reduce", "filename": f"{L.PY}/torch/distributed/distributed_c10d.py",
                        "line": 2696}],
            "record_id": seq - 1, "pg_id": 0, "process_group": ("0", "default_pg"), "collective_seq_id": seq,
            "p2p_seq_id": 0, "op_id": seq, "profiling_name": op, "time_created_ns": base + seq * 1000,
            "input_sizes": [[25165824]], "input_dtypes": ["Float"], "output_sizes": [[25165824]],
            "output_dtypes": ["Float"], "state": state, "time_discovered_started_ns": None,
            "time_discovered_completed_ns": None, "retired": state == "completed", "timeout_ms": 600000,
            "is_p2p": False,
        })
    dump: dict[str, Any] = {
        "version": "2.5",
        "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": str(list(range(c.world_size)))}},
        "pg_status": {"0": {"last_enqueued_collective": enqueued, "last_started_collective": -1,
                            "last_completed_collective": completed}},
        "entries": entries,
    }
    prefix = "nccl_trace_rank_" if c.rng.random() < 0.7 else "fr/trace_"
    if fmt == "json":
        job.dump(r, f"{prefix}{r}", json.dumps(dump).encode())
    else:
        job.dump(r, f"{prefix}{r}", pickle.dumps(dump, protocol=2))
