"""SkyPilot (`sky logs`) and Composer-launcher layouts. Each writer applies its launcher's tear-down to the job's
natural story, then writes the files a person would collect. Returns {relative path: text}."""

from __future__ import annotations

from . import render, texts
from .render import agent_log, cut, merge, rank_lines
from .story import Job

IND, LAST = "├── ", "└── "  # sky/utils/ux_utils INDENT_SYMBOL / INDENT_LAST_SYMBOL, as SkyPilot's codegen prints them


def sky_prefix(job: Job, node: int, pid: int) -> str:
    """sky/skylet/executor/slurm.py (read): run prefix `(head, rank=0, pid=P) ` / `(worker1, rank=1, pid=P,
    ip=IP) ` — SkyPilot's `rank` is the NODE rank (SKYPILOT_NODE_RANK), not torch's rank; the pid is the task's
    bash. Colour codes (colorama CYAN / RESET) are kept in a third of the jobs, as a saved terminal log has them."""
    ip = job.hosts[node].ip
    inner = f"head, rank=0, pid={pid}" if node == 0 else f"worker{node}, rank={node}, pid={pid}, ip={ip}"
    if job.extra.get("ansi"):
        return f"\x1b[36m({inner})\x1b[0m "
    return f"({inner}) "


def _torchrun_end(job: Job, node: int, apid: int) -> tuple[list[tuple[float, str]], float]:
    """The node's torchrun: on its first failed worker it logs the failure, SIGTERMs the others, raises
    ChildFailedError; returns (agent lines, time the node's task exits)."""
    ranks = range(node * job.nproc, (node + 1) * job.nproc)
    fails = sorted((job.exits[r][0], r) for r in ranks if r in job.exits)
    if not fails:
        return [], float("inf")
    t_det = fails[0][0] + job.rng.uniform(0.1, 1.0)
    seen = [(r, job.exits[r][1], t) for t, r in fails if t <= t_det]
    lines = []
    r0 = seen[0][0]
    lines.append(agent_log(job, node, t_det, apid, "ERROR", "multiprocessing/api.py:869",
                           f"failed (exitcode: {job.exits[r0][1]}) local_rank: {job.local(r0)} (pid: {job.pids[r0]}) "
                           f"of binary: /usr/bin/python3"))
    for r in ranks:
        if r not in [s[0] for s in seen]:
            lines.append(agent_log(job, node, t_det + 0.01, apid, "WARNING", "multiprocessing/api.py:897",
                                   f"Sending process {job.pids[r]} closing signal SIGTERM"))
            cut(job, r, t_det + 0.05, -15)
    t_end = t_det + job.rng.uniform(0.5, 2)
    lines += [(t_end, x) for x in render.child_failed(job, node, t_end + job.hosts[node].skew, seen)]
    return lines, t_end + 0.1


def _preempt_end(job: Job, node: int, apid: int) -> tuple[list[tuple[float, str]], float]:
    t = job.tf + job.rng.uniform(0, 0.4)
    got, exc = texts.sigterm_agent(t, apid)
    lines = [agent_log(job, node, t, apid, "WARNING", "agent/server/api.py:704", got)]
    for r in range(node * job.nproc, (node + 1) * job.nproc):
        lines.append(agent_log(job, node, t + 0.01, apid, "WARNING", "multiprocessing/api.py:897",
                               f"Sending process {job.pids[r]} closing signal SIGTERM"))
        cut(job, r, t + 0.05, -15)
    tb = ["Traceback (most recent call last):", '  File "/usr/local/bin/torchrun", line 8, in <module>',
          "    sys.exit(main())", f'  File "{render.SITE}/torch/distributed/elastic/multiprocessing/api.py", line 84, '
          "in _terminate_process_handler", "    raise SignalException(f\"Process {os.getpid()} got signal: {sigval}\", "
          "sigval=sigval)", exc]
    job.evidence = got
    return lines + [(t + 2, x) for x in tb], t + 2.1


def write_skypilot(job: Job) -> dict[str, str]:
    """`sky logs <cluster> <job>`: every node's `run:` output (torchrun --nnodes N --node_rank $SKYPILOT_NODE_RANK,
    no --tee) streamed through one prefix per node; SkyPilot cancels the other nodes when one node's task fails
    (codegen get_or_fail: `ray.cancel(force=True)`, return code 137) and prints the return code list (read in
    sky/backends task codegen: `ERROR: Job N failed with return code list: [...] (reason)`)."""
    rng = job.rng
    job.extra["ansi"] = rng.random() < 0.33
    apids = [rng.randint(2000, 9000) for _ in range(job.nodes)]
    render.progress(job, 0, "plain")
    ends, agent = {}, {}
    for n in range(job.nodes):
        agent[n], ends[n] = (_preempt_end if job.kind == "preempt" else _torchrun_end)(job, n, apids[n])
    first = min(ends, key=lambda n: ends[n])
    t_cancel = ends[first] + rng.uniform(0.3, 1.5)
    codes = []
    for n in range(job.nodes):
        if ends[n] <= t_cancel:
            codes.append(1)
            continue
        codes.append(137)
        for r in range(n * job.nproc, (n + 1) * job.nproc):
            cut(job, r, t_cancel, -9)
        agent[n] = [x for x in agent[n] if x[0] <= t_cancel]
    streams = []
    for n in range(job.nodes):
        pre = sky_prefix(job, n, apids[n] - job.rng.randint(2, 9))  # the task's bash, torchrun's parent
        lines = render.agent_banner(job, n, job.t0 + 2 + job.rng.uniform(0, 1), apids[n]) + agent[n]
        for r in range(n * job.nproc, (n + 1) * job.nproc):
            lines += rank_lines(job, r)
        streams.append([(t, pre + s) for t, s in sorted(lines, key=lambda x: x[0])])
    head = [f"{IND}Waiting for task resources on {job.nodes} nodes.",
            f"{LAST}Job started. Streaming logs... (Ctrl-C to exit log streaming; job will not be killed)"]
    reason = ""
    if 137 in codes:
        reason = (f" (A Worker failed with return code {next(c for c in codes if c != 137)}, SkyPilot cleaned up the "
                  "processes on other nodes with return code 137)")
    sid = rng.randint(2, 40)
    tail = [f"ERROR: Job {sid} failed with return code list: {codes}{reason}", "INFO: Job finished (status: FAILED)."]
    body = head + merge(streams) + tail
    files = {"sky-logs.txt": "\n".join(body) + "\n"}
    if job.kernel_logs:
        for n in range(job.nodes):
            files[f"dmesg/{job.hosts[n].name}.log"] = render.kernel_file(job, n, "dmesg")
    return files


def write_composer(job: Job) -> dict[str, str]:
    """One console per node from `composer -n P --world_size W --node_rank N --master_addr A train.py` (composer
    cli/launcher.py, read): local rank 0 writes to the console, the others to temp files the launcher prints only
    for ranks that crashed (not -9/-15: those it treats as killed by itself); `Rank R crashed with exit code C.` is
    the first crash its 0.1 s poll finds in rank order; the closing `Global rank R (PID P) exited with code C` is the
    first non-zero return code in rank order. Nodes do not tell each other: each fails on its own."""
    rng = job.rng
    verbose = rng.random() < 0.5
    files = {}
    for r in range(job.world):
        render.progress(job, r, "composer")
    for n in range(job.nodes):
        h = job.hosts[n]
        ranks = list(range(n * job.nproc, (n + 1) * job.nproc))
        con: list[tuple[float, str]] = [(job.t0, f"+ echo node_rank={n} host={h.name} master_addr={job.hosts[0].ip}"),
                                        (job.t0, f"node_rank={n} host={h.name} master_addr={job.hosts[0].ip}")]
        lg = "composer.cli.launcher"
        if verbose:
            con.append((job.t0 + 1, f"INFO:{lg}:Starting distributed environment on local node for global_rank"
                        f"({ranks[0]}-{ranks[-1]})"))
            con.append((job.t0 + 1, f"INFO:{lg}:Distributed KV store: tcp://{job.hosts[0].ip}:29500"))
            for r in ranks:
                con.append((job.t0 + 1.1, f"INFO:{lg}:Launching process for local_rank({job.local(r)}), global_rank"
                            f"({r}) with command(['/usr/bin/python3', '-u', '{job.script}', 'yamls/mpt-7b.yaml'])"))
        fails = sorted((job.exits[r][0], r) for r in ranks if r in job.exits)
        if fails:
            t_det = fails[0][0] + 0.1
            crashed = min(r for t, r in fails if t <= t_det)
            con.append((t_det, f"ERROR:{lg}:Rank {crashed} crashed with exit code {job.exits[crashed][1]}."))
            for r in ranks:
                if r not in job.exits or job.exits[r][0] > t_det:
                    if verbose:
                        con.append((t_det + 0.01, f"INFO:{lg}:Killing global rank {r} (PID {job.pids[r]}) with "
                                    "SIGTERM"))
                    cut(job, r, t_det + 0.05, -15)
            t = t_det + 0.5
            con.append((t, "Waiting up to 30 seconds for all training processes to terminate. Press Ctrl-C to exit "
                        "immediately."))
            con += rank_lines(job, ranks[0])
            for r in ranks:
                code = job.exits[r][1]
                if code in (0, -9, -15):
                    continue
                blk = [f"Global rank {r} (PID {job.pids[r]}) exited with code {code}"]
                if r != ranks[0]:
                    blk += [f"----------Begin global rank {r} STDOUT----------"]
                    blk += [s for _, s in rank_lines(job, r, ("out", "nccl"))]
                    blk += [f"----------End global rank {r} STDOUT----------",
                            f"----------Begin global rank {r} STDERR----------"]
                    blk += [s for _, s in rank_lines(job, r, ("c10", "py"))]
                    blk += [f"----------End global rank {r} STDERR----------"]
                con += [(t + 1, s) for s in blk]
            worst = next(r for r in ranks if job.exits[r][1] != 0)
            con.append((t + 2, f"ERROR:{lg}:Global rank {worst} (PID {job.pids[worst]}) exited with code "
                        f"{job.exits[worst][1]}"))
        else:
            con += rank_lines(job, ranks[0])
        files[f"composer-node{n}.log"] = "\n".join(s for _, s in sorted(con, key=lambda x: x[0])) + "\n"
        if job.kernel_logs:
            files[f"kernel/{h.name}.log"] = render.kernel_file(job, n, "journal")
    return files
