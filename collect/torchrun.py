"""After a failed torchrun: ship what TorchElastic left on this node, with each file's global rank and host.

Upstream layouts (pytorch/pytorch):
- `--log-dir DIR`: DefaultLogsSpecs.reify (torch/distributed/elastic/multiprocessing/api.py) files worker output
  as DIR/<rdzv run id>_<mkdtemp suffix>/attempt_<restart>/<local rank>/{stdout,stderr}.log and points each
  worker's TORCHELASTIC_ERROR_FILE at error.json in the same folder.
- error.json: ErrorHandler.record_exception (torch/distributed/elastic/multiprocessing/errors/error_handler.py)
  writes {"message": {"message": "<Type>: <text>", "extraInfo": {"py_callstack": traceback.format_exc(),
  "timestamp": "<unix s>"}}}; the agent's copy (dump_error_file) may add message.errorCode.
- Flight Recorder: DebugInfoWriter (torch/csrc/distributed/c10d/NCCLUtils.cpp, later FlightRecorder.cpp) writes
  one file per rank at TORCH_NCCL_DEBUG_INFO_TEMP_FILE (newer: TORCH_FR_DUMP_TEMP_FILE) + str(global rank),
  default /tmp/nccl_trace_rank_.
- The agent's own output (pass it with agent_logs: `torchrun ... 2> torchrun.log`) names the ranks: its
  rendezvous result (agent/server/api.py _rendezvous: "  local_ranks=[0, 1]" and "  global_ranks=[4, 5]") and
  its failure table (errors/__init__.py ChildFailedError.format_msg: "  rank      : 5 (local_rank: 1)",
  "  exitcode  : -9 (pid: 2304)"). Without it, --node-rank and the number of local-rank folders give
  global = node_rank * nproc + local, as _assign_worker_ranks numbers homogeneous nodes.
"""

from __future__ import annotations

import ast
import json
import re
import socket
from dataclasses import dataclass, field
from pathlib import Path

from collect.send import Item
from ingest.chunking import StreamKey

ATTEMPT = re.compile(r"^attempt_(\d+)$")
FR_ENV = ("TORCH_FR_DUMP_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE")  # the first set wins, as getCvarString
FR_DEFAULT = "/tmp/nccl_trace_rank_"
_LIST = r"(\[[\d, ]*\])"
_LOCAL_RANKS = re.compile(r"^\s*(?:\S+\s+)?local_ranks=" + _LIST + r"\s*$", re.M)
_GLOBAL_RANKS = re.compile(r"^\s*(?:\S+\s+)?global_ranks=" + _LIST + r"\s*$", re.M)
_WORLD = re.compile(r"^\s*(?:\S+\s+)?global_world_sizes=\[(\d+)", re.M)
_TABLE_RANK = re.compile(r"^\s*(?:\S+\s+)?rank\s*: (\d+) \(local_rank: (\d+)\)", re.M)
_TABLE_EXIT = re.compile(r"^\s*(?:\S+\s+)?exitcode\s*: (-?\d+) \(pid: \d+\)", re.M)
_MAX_AGENT_BYTES = 64 << 20  # an agent log is KBs; a bigger file is read for its first 64 MiB only


@dataclass
class Found:
    """What one node's torchrun run left: the sources to ship and what they say about ranks."""

    host: str
    items: list[Item] = field(default_factory=list)
    rank_hosts: dict[int, str] = field(default_factory=dict)
    exit_codes: dict[str, int] = field(default_factory=dict)  # global rank -> exit code, from the failure table
    world_size: int | None = None
    attempt: int = 0
    notes: list[str] = field(default_factory=list)


def last_attempts(log_dir: Path) -> list[tuple[Path, int]]:
    """Each run folder's latest attempt_<n>: the restart that ended the run (earlier ones were restarted from)."""
    best: dict[Path, tuple[int, Path]] = {}
    for folder in sorted(p for p in log_dir.rglob("attempt_*") if p.is_dir()):
        m = ATTEMPT.match(folder.name)
        if m and (folder.parent not in best or int(m.group(1)) > best[folder.parent][0]):
            best[folder.parent] = (int(m.group(1)), folder)
    return [(path, n) for n, path in best.values()]


def error_text(raw: bytes) -> bytes:
    """An error file as the lines the worker would have printed: its py_callstack is traceback.format_exc(), one
    escaped JSON string the line scanner would read as a single line. Other JSON is shipped as it is."""
    try:
        doc = json.loads(raw)
        message = doc["message"]
        if isinstance(message, str):  # the "new message format" error_handler.py tolerates
            return message.encode() + b"\n"
        stack = (message.get("extraInfo") or {}).get("py_callstack") or ""
        text = stack if stack.strip() else str(message.get("message", ""))
        return text.encode() + (b"" if text.endswith("\n") else b"\n")
    except (ValueError, KeyError, TypeError, AttributeError):
        return raw


def _ranks_from_agent(text: str, found: Found) -> dict[int, int]:
    """local -> global from the agent's last rendezvous result, else from its failure table's rows."""
    local_to_global: dict[int, int] = {}
    locals_, globals_ = _LOCAL_RANKS.findall(text), _GLOBAL_RANKS.findall(text)
    if locals_ and globals_:  # the last rendezvous: a restart re-rendezvouses and may renumber
        local_to_global = dict(zip(ast.literal_eval(locals_[-1]), ast.literal_eval(globals_[-1]), strict=False))
    if worlds := _WORLD.findall(text):
        found.world_size = int(worlds[-1])
    rows = _TABLE_RANK.findall(text)
    for (rank, local), code in zip(rows, _TABLE_EXIT.findall(text), strict=False):
        local_to_global.setdefault(int(local), int(rank))
        found.exit_codes[rank] = int(code)
    return local_to_global


def collect(log_dir: Path, host: str | None = None, agent_logs: list[Path] | None = None,
            node_rank: int | None = None, nproc_per_node: int | None = None,
            fr_prefix: str | None = None) -> Found:
    found = Found(host=host or socket.gethostname())
    attempts = last_attempts(log_dir)
    if len(attempts) > 1:  # a reused --log-dir holds earlier runs: this failure is the newest run's
        attempts = [max(attempts, key=lambda a: a[0].stat().st_mtime)]
    local_dirs = {int(d.name): d for folder, _ in attempts for d in folder.iterdir() if d.is_dir() and d.name.isdigit()}
    found.attempt = max((n for _, n in attempts), default=0)
    local_to_global: dict[int, int] = {}
    for agent in agent_logs or []:
        with agent.open("rb") as fh:
            text = fh.read(_MAX_AGENT_BYTES).decode("utf-8", "replace")
        local_to_global.update(_ranks_from_agent(text, found))
        found.items.append(Item(StreamKey("stderr", None, found.host), agent.name, path=agent))
    nproc = nproc_per_node or len(local_dirs) or None
    for local in local_dirs:
        if local not in local_to_global and node_rank is not None and nproc:
            local_to_global[local] = node_rank * nproc + local
    if local_dirs and not local_to_global:
        found.notes.append("no global ranks: pass the agent's log (--agent-log) or --node-rank; files carry their "
                           "local-rank folder and the host")
    for local, folder in sorted(local_dirs.items()):
        rank = local_to_global.get(local)
        if rank is not None:
            found.rank_hosts[rank] = found.host
        for path in sorted(p for p in folder.iterdir() if p.is_file()):
            name = path.relative_to(log_dir).as_posix()
            if path.name == "error.json":
                data = error_text(path.read_bytes())
                found.items.append(Item(StreamKey("stderr", rank, found.host), name, data=data))
            else:
                stream = "stdout" if path.name.startswith("stdout") else "stderr"
                found.items.append(Item(StreamKey(stream, rank, found.host), name, path=path))  # type: ignore[arg-type]
    if fr_prefix:
        # a node's /tmp keeps earlier jobs' dumps: only those written since this run's attempt folder count
        since = min((folder.stat().st_mtime for folder, _ in attempts), default=None)
        found.items += flight_dumps(fr_prefix, found.host, set(local_to_global.values()) or None, since)
    return found


def flight_dumps(prefix: str, host: str, ranks: set[int] | None, since: float | None = None) -> list[Item]:
    """prefix + <global rank> files (only this node's ranks, when known): each one whole shard, on `nccl`."""
    base = Path(prefix)
    items = []
    for path in sorted(base.parent.glob(base.name + "*")):
        tail = path.name[len(base.name):]
        if not path.is_file() or not tail.isdigit() or (ranks is not None and int(tail) not in ranks):
            continue
        if since is not None and path.stat().st_mtime < since - 1.0:  # 1 s: coarse file-system clocks
            continue
        items.append(Item(StreamKey("nccl", int(tail), host), path.name, path=path, whole=True))
    return items
