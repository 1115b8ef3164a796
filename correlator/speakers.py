"""Who said a line: prefixes, NCCL headers and file names. Pure functions of text."""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import PurePath
from typing import NamedTuple

from correlator.job_files import is_job_output

# Prefixes that launchers and log collectors put before a worker's own text, tried repeatedly so that stacked
# prefixes (pdsh "host: " before torchrun "[default3]:") are all read.
# - Ray (python/ray/_private/worker.py, print_worker_logs): "({actor or task name} pid=N, ip=A) ", the name left
#   out when there is none, ", ip=A" left out on the driver's own node; "(raylet, ip=A) " for the raylet's lines.
# - torchrun: "[{role}{local_rank}]:" is its tee's default (torch/distributed/elastic/multiprocessing/tail_log.py,
#   header=f"[{self._name}{local_rank}]:", the role "default" unless --role says otherwise): the LOCAL rank.
#   "[rank{N}]:" is the GLOBAL rank: TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE="[rank${rank}]:" (agent/server/
#   local_elastic_agent.py substitutes rank=worker.global_rank) and c10's own log prefix, the default process
#   group's rank (pytorch/pytorch#110623).
# - srun -l: "N: " (the task's SLURM_PROCID), also "[N]: ".
# - pdsh (and DeepSpeed's pdsh runner): "host: ", the host as the host list names it: a name or an IPv4 address.
# - Open MPI's mpirun --tag-output (Horovod's horovodrun passes it): "[jobid,rank]<stdout|stderr|stddiag>:", the
#   rank being the process's MPI_COMM_WORLD rank (mpirun(1): "Tag each line of output to stdout, stderr, and
#   stddiag with [jobid, MCW_rank]<stdxxx>"); with --timestamp-output the process's output line starts with the
#   time in ctime's form, the tag right after it ("Fri Aug 11 12:31:45 2023[1,0]<stdout>:"). Horovod's own launcher
#   (horovodrun without MPI: horovod/runner/gloo_run.py runs each slot with index=slot_info.rank, and
#   runner/common/util/safe_shell_exec.py prefix_connection writes '{time}[{rank}]<{prefix}>:', time.asctime when
#   --prefix-output-with-timestamp) tags lines the same way without the job id: "[3]<stderr>:", the global rank.
# - kubectl logs --prefix: "[pod/<pod>/<container>] " (kubernetes/kubectl pkg/cmd/logs/logs.go, addPrefixIfNeeded:
#   fmt.Sprintf("[pod/%s/%s] ", ref.Name, containerName)), "[node/<node>] " for a node's logs: the pod's name is
#   its hostname (the host NCCL and torchrun print), the node's its own.
# - A collector's timestamp before everything else, naming no one but hiding the prefixes behind it: `kubectl logs
#   --timestamps` and `docker logs -t` (RFC 3339 with nanoseconds, then a space), the kubelet's CRI log files under
#   /var/log/pods ("2016-10-06T00:17:09.669794202Z stdout F ...": time, stream, P or F; kubernetes
#   pkg/kubelet/kuberuntime/logs/logs.go; CRI-O writes the offset as +00:00), and collectors that end it with ": ".
# - SkyPilot (`sky logs` of a multi-node task; skypilot-org/skypilot sky/skylet/executor/slurm.py, "Build log prefix"):
#   "(head, rank=0, pid={pid}) " on the head, "(worker1, rank=1, pid={pid}, ip=1.2.3.4) " on the others, inside
#   colorama's cyan ("\x1b[36m" ... "\x1b[0m"). Its rank is the NODE's (SKYPILOT_NODE_RANK, one task per node) and
#   its pid the node's run script's: neither is a worker's, so only the address is kept.
_IPV4 = r"\d{1,3}(?:\.\d{1,3}){3}"
_CTIME = r"[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}"  # asctime(3): "Fri Aug 11 12:31:45 2023"
# A collector's stamp before a line (kubectl logs --timestamps, CRI files, a CI or web viewer's, Python logging's
# asctime): RFC 3339's date-time, with a space for the "T" as its section 5.6 allows and most tools print it.
_RFC3339 = r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?"
_PREFIXES: list[tuple[str, re.Pattern[str]]] = [
    ("ray", re.compile(r"^\((?:(?:(?P<role>[^\s()=,]+) )?pid=(?P<pid>\d+)|raylet)(?:, ip=(?P<host>[\w.:-]+))?\)\s?")),
    ("vllm", re.compile(r"^\((?:VllmWorker|RayWorkerWrapper|EngineCore)[^)]*?\brank=(?P<rank>\d+)"
                        r"(?: pid=(?P<pid>\d+))?[^)]*\)\s?")),
    ("torchrun", re.compile(r"^\[(?:rank(?P<rank>\d+)|(?:default|trainer|worker)(?P<local_rank>\d+))\]:\s?")),
    ("srun", re.compile(r"^\[?(?P<rank>\d{1,5})\]?: ")),
    ("pdsh", re.compile(r"^(?P<host>[A-Za-z][\w.-]*[\w]): (?=\S)")),
    ("pdsh", re.compile(rf"^(?P<host>{_IPV4}): (?=\S)")),
    ("mpirun", re.compile(rf"^(?:{_CTIME})?\[(?:\d+,)?(?P<rank>\d+)\]<(?:stdout|stderr|stddiag)>:\s?")),
    ("stamp", re.compile(rf"^{_RFC3339}:? (?:(?:stdout|stderr) [FP] )?")),
    ("skypilot", re.compile(rf"^(?:\x1b\[[\d;]*m)?\((?:head|worker\d+), rank=\d+, pid=\d+(?:, ip=(?P<host>{_IPV4}))?\)"
                            r"(?:\x1b\[[\d;]*m)?\s?")),
    ("kubectl", re.compile(r"^\[(?:pod/(?P<host>[a-z0-9][a-z0-9.-]*)/[\w.-]*|node/(?P<node>[\w.-]+))\] ")),
    # torchx log (torchx/cli/cmd_log.py, print_log_lines: f"{role_name}/{replica_id} " before each line): names a
    # replica, not its host, and no rank (dist.ddp's default c10d rendezvous numbers the nodes in the order they
    # join, node_rank = replica_id only with rdzv_backend=static); peeled so the torchrun prefix and NCCL header
    # behind it are read
    ("torchx", re.compile(r"^(?P<role>[A-Za-z][\w-]*)/(?P<replica>\d+) (?=\S)")),
]
_TORCHX = _PREFIXES[10][1]
# Where any of _PREFIXES could match: most lines carry none, and one test beats five failed ones.
_MAY_HAVE_PREFIX = re.compile(rf"[(\[\d\x1b]|[A-Za-z][\w.-]*[\w]: (?=\S)|{_CTIME}\[|[A-Za-z][\w-]*/\d+ (?=\S)")
# Which of them can match, by a line's first character (each needs its own), in _PREFIXES' order.
_OPENING = {"(": [*_PREFIXES[0:2], _PREFIXES[8]], "[": [*_PREFIXES[2:4], _PREFIXES[6], _PREFIXES[9]],
            "\x1b": [_PREFIXES[8]]}
_DIGIT_FIRST, _LETTER_FIRST = [_PREFIXES[7], _PREFIXES[3], _PREFIXES[5]], [_PREFIXES[4], _PREFIXES[6], _PREFIXES[10]]
_ASCII_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
# NCCL: host:pid:tid [dev]  (dev is the local CUDA device, not the rank; NVIDIA/nccl src/debug.cc prints
# "%s:%d:%d [%d] " with the host name, pid, tid and cudaDev). A paste that elides the head of a host's name
# ("...-48:34050:34121 [0] ") still names one host by it, consistently: read it as that host's name.
_NCCL = re.compile(r"(?:^|\s|\])(?P<host>[A-Za-z0-9][\w.-]*|\.\.\.(?=[\w.-]*[A-Za-z0-9])[\w.-]*):(?P<pid>\d+):"
                   r"(?P<tid>\d+) \[(?P<dev>\d+)\] ")
# What every _NCCL match holds, found fast (a literal first): on a line without an NCCL header, _NCCL tries every
# position (4.7 us on a watchdog line, 0.2 with this test first).
_NCCL_HINT = re.compile(r":\d+:\d+ \[\d+\] ")
_RANK_IN_TEXT = re.compile(r"\[(?:PG ID \d+ PG GUID \S+ )?Rank (?P<rank>\d+)\]")
_SYSLOG_HOST = re.compile(r"^[A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d (?P<host>[\w.-]+) [\w./-]+(?:\[\d+\])?: ")
PDSH_NOT_HOST = frozenset(
    {"ERROR", "WARNING", "INFO", "DEBUG", "CRITICAL", "Traceback", "RuntimeError", "Error", "error", "warning",
     "File", "NCCL", "E", "W", "I", "srun", "slurmstepd", "torch", "Exception", "ValueError", "KeyError",
     "Note", "Hint", "See", "Reason", "Status", "State", "Message", "Exit Code", "http", "https"}
)


def _prefixes_for(first: str) -> list[tuple[str, re.Pattern[str]]]:
    """The prefixes that may match a line beginning with ``first`` (srun's rank is a \\d: any decimal digit)."""
    if found := _OPENING.get(first):
        return found
    if first.isdecimal():
        return _DIGIT_FIRST
    return _LETTER_FIRST if first in _ASCII_LETTERS else []


_new_who = tuple.__new__


class Who(NamedTuple):  # a tuple: made, hashed and compared for every distinct matched line, and pickled by the pool
    rank: int | None = None  # the global rank
    host: str | None = None
    pid: int | None = None
    device: int | None = None
    local_rank: int | None = None  # the rank on its node (torchrun's "[default3]:"), not the global one


# Ascend CANN's error codes lead their lines ("EI9999: Inner Error!", "EE1002: ..."): six characters, the level (E,
# W or I), the module (1-9 or A-Z: I is HCCL, E the runtime, H ACL) and four digits (the CANN troubleshooting
# guide, "error code display"). They look like a pdsh "host: " prefix but name no host.
_CANN_ERROR_CODE = re.compile(r"[EWI][0-9A-Z]\d{4}")


def _looks_like_host(word: str) -> bool:
    if word in PDSH_NOT_HOST or word.endswith(("Error", "Exception", "Warning")) or _CANN_ERROR_CODE.fullmatch(word):
        return False
    # A dotted word without digits or hyphens is a logger's name (trainer.integrity: ...), not a host.
    return any(c.isdigit() for c in word) or "-" in word


def read_prefixes(line: str, base: Who) -> tuple[Who, str]:
    """Peel launcher prefixes off ``line``; returns who they name (over ``base``) and the rest of the line."""
    who = base
    rest = line
    if not _MAY_HAVE_PREFIX.match(line):
        return who, rest
    for _ in range(4):
        for name, rx in _prefixes_for(rest[:1]):
            m = rx.match(rest)
            if not m:
                continue
            groups = m.groupdict()
            if name == "pdsh" and not _looks_like_host(groups["host"]):
                continue
            who = prefix_step(who, name, groups, base)
            rest = rest[m.end():]
            break
        else:
            break
    return who, rest


def prefix_step(who: Who, name: str, groups: dict[str, str | None], base: Who) -> Who:
    """``who`` after one prefix of kind ``name`` (its regex's groups) is read."""
    # Who(...) rather than _replace: this runs for every distinct matched line.
    rank, host, pid, local = groups.get("rank"), groups.get("host") or groups.get("node"), groups.get("pid"), \
        groups.get("local_rank")
    if local is not None:
        # torchrun under srun -l ("0: [default3]: ..."): srun's task is the node's launcher, not a worker's rank
        keep = base.rank if who.local_rank is None and who.rank is not None else who.rank
        return Who(keep, host or who.host, who.pid, who.device, int(local))
    return Who(who.rank if rank is None else int(rank), host or who.host, int(pid) if pid else who.pid,
               who.device, who.local_rank)


def read_speaker(line: str, base: Who) -> Who:
    """Everything a single line says about who printed it."""
    return speaker_and_body(line, base)[0]


def speaker_and_body(line: str, base: Who) -> tuple[Who, str]:
    """Who printed ``line`` (read_speaker), and the line without its launcher prefixes (read_prefixes)."""
    if m := _NCCL.match(line, 0, 200):  # endpos, not line[:200]: matched as the slice would be, without copying
        # Most distinct lines of a big job start with NCCL's header, and no launcher prefix can match a line that
        # does (each needs "(", "[", "N: " or "host: " first): read_prefixes would return the line as it is.
        who = Who(base.rank, m["host"], int(m["pid"]), int(m["dev"]), base.local_rank)
        if who.rank is None and (r := _RANK_IN_TEXT.search(line)):
            who = Who(int(r["rank"]), who.host, who.pid, who.device, who.local_rank)
        return who, line
    who, rest = read_prefixes(line, base)
    if _NCCL_HINT.search(rest, 0, 200) and (m := _NCCL.search(rest, 0, 200)):
        who = Who(who.rank, m["host"], int(m["pid"]), int(m["dev"]), who.local_rank)
    elif rest is not line and who.host is None and _TORCHX.match(line):
        # a torchx replica's line that names no host: torchrun's local rank behind the replica prefix is a rank of
        # some node, not a speaker to look up; the line is read as if unprefixed (its failure table places it)
        who, rest = base, line
    elif m := _SYSLOG_HOST.match(rest):
        who = Who(who.rank, m["host"], who.pid, who.device, who.local_rank)
    if who.rank is None and (m := _RANK_IN_TEXT.search(rest)):
        who = Who(int(m["rank"]), who.host, who.pid, who.device, who.local_rank)
    return who, rest


# The number ends at a separator or the name's end: one running on into letters (gpu-0f9b-node1, worker-6c9f7d8b5)
# is a generated suffix, not an index. Kubernetes names a ReplicaSet's pods <name>-<pod-template-hash>-<5 chars> from
# the alphabet "bcdfghjklmnpqrstvwxz2456789" (k8s.io/apimachinery pkg/util/rand String, SafeEncodeString), and
# cloud node pools name hosts with a hex hash (GKE gke-<cluster>-<pool>-<8 hex>-<4 chars>): digits then letters.
_FILE_RANK = re.compile(r"(?:^|[^a-z])(?P<word>rank|proc|worker|process|gpu)[-_.]?(?P<rank>\d{1,5})(?![0-9a-z])",
                        re.I)
MAX_DEVICES = 16  # GPUs one node addresses by index: gpu3.log is a device's (its rank), gpu288 a host's name


def file_rank(name: str, leading: bool = False) -> int | None:
    """The rank a file or folder name gives (rank3.log, worker_2, gpu3.log), or None; ``leading``: only at its
    start. A GPU index past what a node holds is a host's number (gpu288), not a rank."""
    m = _FILE_RANK.search(name)
    if m is None or (leading and m.start() != 0):
        return None
    rank = int(m["rank"])
    return None if m["word"].lower() == "gpu" and rank >= MAX_DEVICES else rank
_HOSTISH = re.compile(r"^(?=.*\d)[A-Za-z][\w-]*(?:\.[\w-]+)*$")
_NOT_HOST_DIRS = re.compile(
    r"^(?:logs?|out|output|job[-_]?\d*|run[-_]?\d*|ranks?|tmp|\d+|k8s|(?:slurm|train|dmesg|syslog|std(?:out|err)|"
    r"attempt|step|epoch|try)[\w-]*)$",
    re.I,
)


# A Kubernetes training pod's name ends with its replica type and index (Kubeflow's PyTorchJob and MPIJob:
# {job}-{master|worker|launcher}-{index}; a JobSet's {jobset}-{replicated job}-{job index}-{pod index}): a host,
# even when the job's name starts like a folder that is not one ("trainjob-worker-6", not "train_logs").
_POD_NAME = re.compile(r"-(?:master|worker|launcher|node|host)s?-\d+(?:-\d+)?$", re.I)
_ATTEMPT = re.compile(r"^attempt_\d+$")
# dmesg, syslog, kern.log, /var/log/messages, journalctl: as a file's name or a folder holding such files
_SYSTEM_LOG = re.compile(r"(?:^|[/\\._-])(?:dmesg|syslog|kern|messages|journal(?:ctl)?)(?:[/\\._-]|\d|$)", re.I)


def folder_host(path: str) -> str | None:
    """The host a log's folders name (node017/rank3.log), not its file name."""
    return _head_facts(os.path.split(path)[0])[5]


def _local_from_folders(head: str) -> int | None:
    """torchrun --log-dir files each worker's output under <run id>/attempt_<n>/<local rank>/ (torch/distributed/
    elastic/multiprocessing/api.py, DefaultLogsSpecs.reify): that folder is the LOCAL rank."""
    if "attempt_" not in head:  # splitting the path (pathlib) for every source was a tenth of correlating
        return None
    parts = PurePath(head).parts
    if len(parts) >= 2 and parts[-1].isdecimal() and _ATTEMPT.match(parts[-2]):
        return int(parts[-1])
    return None


# NeMo's exp_manager writes into <exp_dir>/<name>/<version>/ (NVIDIA/NeMo nemo/utils/exp_manager.py, get_log_dir):
# every rank its own nemo_log_globalrank-{global_rank}_localrank-{local_rank}.txt, and global rank zero alone
# (is_global_rank_zero()) cmd-args.log, nemo_error_log.txt (add_err_file_handler) and lightning_logs.txt
# (add_filehandlers_to_pl_logger). The folders above are an experiment's name and version, never a host.
_NEMO_RANK_FILE = re.compile(r"^nemo_log_globalrank-(?P<rank>\d+)_localrank-(?P<local>\d+)\.txt$")
_NEMO_RANK_ZERO_FILES = frozenset({"nemo_error_log.txt", "lightning_logs.txt", "cmd-args.log"})
# A batch job's own output file, named with sbatch's filename pattern: %j (the job id) or %A_%a (array job and task)
# after the job's name (%x) or a fixed word (SchedMD/slurm doc/man/man1/sbatch.1, "filename pattern"):
# llama-70b-3131215.out, log-gpt_3196507.out, gpt3-175b-5439011_8.out. It holds every task's lines: not a host's.
_JOB_ID_TAIL = re.compile(r"[-_.]\d{5,}(?:[-_]\d{1,5})?$")
# After the job id, a per-node pattern's field: %N, the node's short host name (llama-3505731-gpu234.out,
# dit-xl-7240095-a3-highgpu-389.out). An index there (%t task, %n node, %a array task) is matched above: no host.
_JOB_ID_THEN_HOST = re.compile(r"[-_]\d{5,}-(?P<host>[A-Za-z][A-Za-z0-9-]*\d)$")
# RFC 1123 host names hold letters, digits and hyphens: a name with an underscore is a job's or a run's, not a host's
_NOT_A_HOST_NAME = re.compile(r"_")


def _nemo_file(name: str) -> Who | None:
    if m := _NEMO_RANK_FILE.match(name):
        return Who(rank=int(m["rank"]), local_rank=int(m["local"]))
    return Who(rank=0) if name in _NEMO_RANK_ZERO_FILES else None


def _name_host(base: str, name: str) -> str | None:
    """The host a file's own name gives, when nothing else in its path does: the %N host of a Slurm output file
    named <name>-<job id>-<host>; else the name itself where it reads like a host's (node017, gpu-12, dgx3, and
    after a GPU model h100-133 or a100-56; not a001, not a job's output, not a run's: correlator/job_files.py)."""
    if is_job_output(name):
        return None
    if m := _JOB_ID_THEN_HOST.search(base):
        return m["host"]
    return base if _BARE_HOST.match(base) and not _NOT_HOST_DIRS.match(base) and _names_host(base) else None


def _name_rank(name: str, base: str) -> int | None:
    """The rank a file's name gives, read before the %N host a Slurm output file names after its job id:
    llama-3505731-gpu3.out is node gpu3's file, not its GPU 3's."""
    m = _JOB_ID_THEN_HOST.search(base)
    return file_rank(name if m is None else base[:m.start("host")])


def _names_host(base: str) -> bool:
    """Whether a file or folder name that reads like a host's can be one (not a job's output, not a run's)."""
    return not _JOB_ID_TAIL.search(base) and not _NOT_A_HOST_NAME.search(base)


# A file named by a node's IPv4 address, then its extensions (10.1.2.3.log): collectors that reach nodes by
# address name their kernel logs so
_ADDRESS_NAME = re.compile(rf"^(?P<ip>{_IPV4})(?:\.[A-Za-z]\w*)*$")
_BARE_HOST = re.compile(r"^(?:[A-Za-z]{2,}[\w-]*\d|[A-Za-z]\d+-[\w-]*\d)")


def who_from_path(path: str) -> Who:
    """Rank and host from a log's file name and directories: rank3.log, node017/stdout.log, node017.dmesg; a
    torchrun log dir's attempt_0/3/stderr.log is local rank 3. What the folders say is read once per folder
    (_head_facts): a job's files are read twice (scan and correlation), 163,840 of them at 131,072 ranks."""
    head, sep, name = path.rpartition("/")  # os.path.split's, where the path ends in a name after one slash
    if name in ("", ".", "..") or (sep and (not head or head[-1] == "/")):
        return _who_from_odd_path(path)
    local, system_head, rank_alone, host_alone, host_beside_rank, host_folder = _head_facts(head)
    if local is not None:
        return Who(host=host_folder, local_rank=local)
    if (nemo := _nemo_file(name)) is not None:
        return nemo
    base = name.split(".")[0]
    # the path names a system log where its folders or its file's name do: a match of _SYSTEM_LOG in the path
    # that crosses the separator is one in the folders (ending at their end) or in the name (from its start)
    system = system_head or _SYSTEM_LOG.search(name) is not None
    if system and (address := _ADDRESS_NAME.match(name)):
        return Who(host=address["ip"])  # dmesg/10.1.2.3.log: a node's kernel log named by its address
    if system or _POD_NAME.search(base):  # see _who_from_odd_path
        return _new_who(Who, (None, base if _HOSTISH.match(base) and not _NOT_HOST_DIRS.match(base) else host_folder,
                              None, None, None))
    rank = _name_rank(name, base)
    host = host_beside_rank
    if rank is None:
        rank, host = rank_alone, host_alone
    if host is None and rank is None:
        host = _name_host(base, name)
    return _new_who(Who, (rank, host, None, None, None))  # Who(rank, host), made in C (a file's own: no memo)


@lru_cache(maxsize=4096)
def _head_facts(head: str) -> tuple[int | None, bool, int | None, str | None, str | None, str | None]:
    """What a log's folders say whatever its file's name, read as _who_from_odd_path reads them: the local rank
    of a torchrun log dir; whether they name a system log; the rank and host read where the file's name gives no
    rank; the host read where it does; the innermost folder named like a host that starts with no rank."""
    rank = host = None
    for leading_rank, hostish, part in _folders(head):
        if rank is None and leading_rank is not None:
            rank = leading_rank
            continue
        if hostish:
            host = part
            break
    beside_rank = next((part for _, hostish, part in _folders(head) if hostish), None)
    folder = next((part for leading, hostish, part in _folders(head) if hostish and leading is None), None)
    return (_local_from_folders(head), _SYSTEM_LOG.search(head) is not None, rank, host, beside_rank, folder)


def _who_from_odd_path(path: str) -> Who:
    """who_from_path of a path whose last part is not a plain file name, read step by step."""
    head, name = os.path.split(path)
    if name in ("", ".", ".."):  # not a plain file name: let pathlib say what the name and folders are
        pure = PurePath(path)
        head, name = str(pure.parent) if len(pure.parts) > 1 else "", pure.name
    if (local := _local_from_folders(head)) is not None:
        return Who(host=folder_host(path), local_rank=local)
    if (nemo := _nemo_file(name)) is not None:
        return nemo
    rank = None
    host = None
    base = name.split(".")[0]
    if (address := _ADDRESS_NAME.match(name)) and _SYSTEM_LOG.search(path):
        return Who(host=address["ip"])  # dmesg/10.1.2.3.log: a node's kernel log named by its address
    if _SYSTEM_LOG.search(path) or _POD_NAME.search(base):
        # A kernel or system log is a node's (syslog/gpu300.log names host gpu300, not rank 300), and a pod's log
        # file is named after the pod (a replica index, not a rank: PyTorchJob's worker-0 is rank 1, and under
        # torchrun a pod is a node)
        folder = next((part for leading, hostish, part in _folders(head) if hostish and leading is None), None)
        return Who(host=base if _HOSTISH.match(base) and not _NOT_HOST_DIRS.match(base) else folder)
    rank = _name_rank(name, base)
    for leading_rank, hostish, part in _folders(head):
        if rank is None and leading_rank is not None:
            rank = leading_rank
            continue
        if hostish:
            host = part
            break
    if host is None and rank is None:
        host = _name_host(base, name)
    return Who(rank=rank, host=host)


@lru_cache(maxsize=4096)
def _folders(head: str) -> tuple[tuple[int | None, bool, str], ...]:
    """The folders of a path's head, innermost first: the rank a folder's name starts with, whether it reads as a
    host's name, and the name. Once per folder: a 4,096-rank job's 5,120 files sit in 512 of them, and reading
    each file's folders again took a twentieth of its scan."""
    facts = []
    inner = ""
    for part in reversed(PurePath(head).parts if head else ()):
        leading_rank = file_rank(part, leading=True)
        hostish = (bool(_HOSTISH.match(part)) and (not _NOT_HOST_DIRS.match(part) or bool(_POD_NAME.search(part)))
                   and not (_FILE_RANK.match(part) and leading_rank is not None) and _names_host(part))
        # torchrun --log-dir's run folder, "{run_id}_{random}" (DefaultLogsSpecs.reify: tempfile.mkdtemp(prefix=
        # f"{run_id}_")) above attempt_<n>/: a run, not a host
        if _ATTEMPT.match(inner):
            hostish = False
        facts.append((leading_rank, hostish, part))
        inner = part
    return tuple(facts)


def stream_from_path(path: str) -> str:
    name = PurePath(path).name.lower()
    for stream in ("dmesg", "syslog", "kern", "nccl", "stderr", "stdout", "slurm", "scheduler"):
        if stream in name:
            return {"kern": "dmesg", "slurm": "scheduler"}.get(stream, stream)
    return "other"
