"""The hostile knobs applied to a finished job, before it is written (issue 22, patterns 1-3).

- host aliases: every tool names each node its own way (names.py), the kernel log is kept by its hostname, in
  the journal's format or raw dmesg with seconds since boot;
- local prefixes: the workers' output is torchrun's console, one file per node, each line behind
  ``[{role}{local_rank}]:`` (tail_log.py TailLog.start), a template's ``[rank{global}]: ``, or torchrun's
  --log-dir files ``attempt_0/{local_rank}/stderr.log``; optionally without torchrun's failure table;
- launcher reports: srun's exit lines in the scheduler's output, task 0's first, then slurmstepd's cancel
  notice; with one output file, srun -l's task labels. Under torchrun (a local-prefix mode) a task is a node's
  torchrun; otherwise srun starts one task per GPU, the task id is the global rank, and there is no torchrun.

The workers' own text is what PyTorch, NCCL and the user's code print; the ``[rankN]: `` the default simulator
pastes before Python lines stands for a prefix a launcher adds, so these modes take it off and add theirs. The
``[rankN]:`` before C++ log lines stays: c10 prints it (distributed_c10d.py _update_default_pg ->
c10::SetGlobalRank).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from simulate import hostile_lines as H
from simulate.cluster import START, Job, Line, Shard
from simulate.names import NodeNames, node_names

if TYPE_CHECKING:
    from simulate.cascade import Failure, Knobs

JOB_ID = 881234
SCHEDULER_FILE = f"slurm-{JOB_ID}.out"
_GLOG = re.compile(r"^[IWEF]\d{4} ")
_CTIME = re.compile(r"^\[(\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4})\] (.*)$")
_HEAD = re.compile(r"^node(\d{3}):(\d+:\d+ \[)")
_TABLE_HOST = re.compile(r"^(  host      : )node(\d{3})$")
_CLOSED = re.compile(r"(Connection closed by remote peer )(\d+\.\d+\.\d+\.\d+)<")
_NODE = re.compile(r"\bnode(\d{3})\b")
_SOCKET_IP = re.compile(r"\b10\.0\.(\d+)\.(\d+)\b")


def labelled(knobs: Knobs) -> bool:
    """One output file collected through srun -l: task labels instead of the default simulator's [rankN]: ."""
    return knobs.interleaved and (knobs.local_prefix in ("default", "role", "template") or knobs.launcher_reports)


def any_on(knobs: Knobs) -> bool:
    return bool(knobs.local_prefix or not knobs.failure_table or knobs.aliases or knobs.launcher_reports
                or knobs.survivor_transport or knobs.silent_straggler)


def apply(job: Job, failure: Failure, knobs: Knobs) -> dict[str, NodeNames]:
    """Rewrites the job's shards in place; returns the nodes' names by the default simulator's host name."""
    names: dict[str, NodeNames] = {}
    if any_on(knobs):
        _one_nccl_version(job)
    if not knobs.failure_table:
        for shard in (s for s in job.shards.values() if s.stream == "agent"):
            shard.lines = [ln for ln in shard.lines if _GLOG.match(ln.text)]
    if knobs.aliases:
        names = _aliases(job, knobs.aliases)
    if knobs.local_prefix:
        _local_prefix(job, knobs.local_prefix)
    if knobs.launcher_reports and knobs.aliases != "k8s":  # Kubernetes has no srun; its Job status says it
        if not knobs.local_prefix:  # srun starts one task per GPU itself: there is no torchrun to report
            for path in [p for p, s in job.shards.items() if s.stream == "agent"]:
                del job.shards[path]
        _srun_reports(job, failure, knobs, names)
    return names


_NCCL_2215 = ((" NCCL INFO comm 0x", " NCCL INFO ncclCommInitRank comm 0x"),
              (" misc/socket.cc:538 ", " misc/socket.cc:30 "), (" misc/socket.cc:49 ", " misc/socket.cc:50 "))


def _one_nccl_version(job: Job) -> None:
    """The default lines mix NCCL 2.18-2.21 (sources.py says which); a hostile job speaks 2.21.5 only."""
    for shard in (s for s in job.shards.values() if s.blob is None):
        for ln in shard.lines:
            if " NCCL " in ln.text:
                for old, new in _NCCL_2215:
                    ln.text = ln.text.replace(old, new)


def interleave(job: Job) -> None:
    """Everything through srun -l into one file: torchrun's console per node as task <node>, one task per
    rank otherwise; the kernel and agent logs pasted with their host, as the default simulator does."""
    c = job.c
    merged = Shard("job.log", stream="scheduler")
    for shard in [s for s in job.shards.values() if s.blob is None]:
        if shard.stream == "console" and shard.node is not None:
            label = H.srun_label(shard.node, c.nodes)
        elif shard.stream == "rank" and shard.rank is not None:
            label = H.srun_label(shard.rank, c.world_size)
        elif shard.stream in ("node", "agent") and shard.host:
            label = f"{shard.host}: "
        else:
            label = ""
        for ln in shard.lines:
            ln.text = label + ln.text
            merged.lines.append(ln)
        del job.shards[shard.path]
    job.shards[merged.path] = merged


def _aliases(job: Job, flavour: str) -> dict[str, NodeNames]:
    c, h = job.c, job.c.hrng
    by_node = {n: node_names(flavour, n, c.ip(n * c.gpus_per_node)) for n in range(c.nodes)}
    pod_ip = {c.ip(n * c.gpus_per_node): by_node[n].ip for n in range(c.nodes)}
    reverse = {by_node[n].ip: by_node[n].reverse for n in range(c.nodes)}
    boots = {n: START - timedelta(hours=h.uniform(2, 400)) for n in range(c.nodes)}
    raw = {n: h.random() < 0.5 for n in range(c.nodes)}
    for shard in list(job.shards.values()):
        if shard.blob is not None:
            continue
        node = shard.node
        for ln in shard.lines:
            ln.text = _rename(ln.text, by_node, pod_ip, reverse)
            if shard.stream == "node" and node is not None:
                ln.text = _kernel(ln, by_node[node].kernel, boots[node], raw[node])
        if node is not None:
            _move(job, shard, by_node[node], raw[node])
    return {c.host_name(n): by_node[n] for n in range(c.nodes)}


def _rename(text: str, by_node: dict[int, NodeNames], pod_ip: dict[str, str], reverse: dict[str, str]) -> str:
    """One line as the tools print it: NCCL's header its cut hostname, torchrun's table the FQDN, a closed peer
    its reverse-DNS name, every other mention the scheduler's node name."""
    text = _SOCKET_IP.sub(lambda m: pod_ip.get(m[0], m[0]), text)
    text = _HEAD.sub(lambda m: f"{by_node[int(m[1])].nccl}:{m[2]}", text)
    text = _TABLE_HOST.sub(lambda m: m[1] + by_node[int(m[2])].fqdn, text)
    text = _CLOSED.sub(lambda m: f"{m[1]}{reverse.get(m[2], m[2])}<", text)
    return _NODE.sub(lambda m: by_node[int(m[1])].scheduler if int(m[1]) in by_node else m[0], text)


def _kernel(ln: Line, hostname: str, boot: datetime, raw: bool) -> str:
    """A dmesg -T line as journald keeps it (the kernel's hostname before ``kernel:``) or as raw dmesg prints it
    (seconds since boot, on the node's own clock)."""
    m = _CTIME.match(ln.text)
    if not m:
        return ln.text
    printed = datetime.strptime(m[1], "%a %b %d %H:%M:%S %Y").replace(tzinfo=boot.tzinfo)
    if raw:
        return H.dmesg_raw((printed - boot).total_seconds() + ln.time.microsecond / 1e6, m[2])
    return H.journal_line(printed, hostname, m[2])


def _move(job: Job, shard: Shard, names: NodeNames, raw: bool) -> None:
    """Files are kept under the scheduler's node name; the kernel log under the hostname syslog carries."""
    host = names.kernel if shard.stream == "node" else names.scheduler
    tail = shard.path.split("/", 1)[1]
    if shard.stream == "node":
        tail = "dmesg.log" if raw else "kern.log"
    del job.shards[shard.path]
    shard.path, shard.host = f"{host}/{tail}", host
    job.shards[shard.path] = shard


def _worker_text(text: str, r: int) -> str:
    """A worker's line without the default simulator's pasted [rankN]: (not c10's [rankN]:[ on C++ lines), and
    the training log without a rank of its own (a user's logger seldom prints one)."""
    pasted = f"[rank{r}]: "
    if text.startswith(pasted):
        text = text[len(pasted):]
    return text.replace(f"[INFO] [rank{r}] step", "[INFO] step")


def _local_prefix(job: Job, mode: str) -> None:
    """Workers' lines behind torchrun's prefix, in one console per node with the agent's own lines; or, for
    --log-dir, each worker's stderr in attempt_0/<local rank>/."""
    c = job.c
    consoles: dict[int, Shard] = {}
    # DefaultLogsSpecs.reify: <log_dir>/<rdzv_run_id>_<mkdtemp suffix>/attempt_<n>/<local_rank>/stderr.log; the
    # run id is often the Slurm job id
    run_dir = f"{JOB_ID}_{c.hrng.randrange(16 ** 8):08x}" if mode == "logdir" else ""
    for shard in [s for s in job.shards.values() if s.stream in ("rank", "agent") and s.node is not None]:
        if shard.stream == "rank" and shard.rank is not None:
            r = shard.rank
            header = {"default": f"[default{c.local(r)}]:", "role": f"[rank{c.local(r)}]:",
                      "template": f"[rank{r}]: "}.get(mode, "")
            for ln in shard.lines:
                ln.text = header + _worker_text(ln.text, r)
            if mode == "logdir":
                del job.shards[shard.path]
                shard.path, shard.stream = f"{shard.host}/{run_dir}/attempt_0/{c.local(r)}/stderr.log", "worker"
                job.shards[shard.path] = shard
                continue
        elif mode == "logdir":
            continue
        assert shard.node is not None
        console = consoles.setdefault(shard.node, Shard(f"{shard.host}/console.log", host=shard.host,
                                                        stream="console", node=shard.node))
        console.lines.extend(shard.lines)
        del job.shards[shard.path]
    for console in consoles.values():
        job.shards[console.path] = console


def _srun_reports(job: Job, failure: Failure, knobs: Knobs, names: dict[str, NodeNames]) -> None:
    """srun's view of the end: one error line per node and exit status, node 0's first (its task 0 is what srun
    hears from first when the rendezvous host's agent gives up), then the step's cancel notice."""
    c, h = job.c, job.c.hrng
    sched = {n: names[c.host_name(n)].scheduler if names else c.host_name(n) for n in range(c.nodes)}
    codes = {int(r): code for r, code in failure.exit_codes.items()}
    groups: list[tuple[int, list[int], int]] = []  # (node, tasks, code)
    for node in range(c.nodes):
        ranks = [r for r in c.ranks_on(node) if r in codes]
        if not ranks:
            continue
        if knobs.local_prefix:  # torchrun under srun: one task per node, exit 1 after ChildFailedError
            groups.append((node, [node], 1))
            continue
        for code in sorted({codes[r] for r in ranks}):
            groups.append((node, [r for r in ranks if codes[r] == code], code))
    if not groups:
        return
    first = [g for g in groups if 0 in g[1]] or groups[:1]
    rest = [g for g in groups if g not in first]
    h.shuffle(rest)
    t_end = max((ln.time for s in job.shards.values() for ln in s.lines), default=START) + timedelta(seconds=5)
    text = [H.srun_exit(sched[n], tasks, code) for n, tasks, code in first]
    text += ["srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
             H.step_cancelled(JOB_ID, sched[first[0][0]], c.node_clock(first[0][0], t_end))]
    text += [H.srun_exit(sched[n], tasks, code) for n, tasks, code in rest]
    shard = job.shards.setdefault(SCHEDULER_FILE, Shard(SCHEDULER_FILE, stream="scheduler"))
    shard.lines.extend(Line(t_end + timedelta(milliseconds=i), x) for i, x in enumerate(text))
