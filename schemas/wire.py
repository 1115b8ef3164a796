"""Wire models of the Kafka topics (docs/contracts.md): JobEvent on firstfault.jobs, LogShard on firstfault.shards.

Every field a producer controls is bounded here, once, so the exported JSON Schema (schemas/json/) says the same
as the validation: a number in a message never sizes work or memory downstream, and a value no honest job has is
refused at the edge (400 over HTTP, a dead letter from Kafka) instead of failing later in a worker or the store.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

JobState = Literal["started", "failed", "succeeded", "cancelled", "timeout", "preempted"]
Stream = Literal["stdout", "stderr", "dmesg", "syslog", "scheduler", "nccl", "other"]
Compression = Literal["none", "gzip", "zstd"]

MAX_SHARD_BYTES = 1024 * 1024

# -- bounds: what the largest honest job needs, with room to spare ------------------------------------------------
# The largest training jobs reported run on ~100,000 GPUs, one rank each; 2**20 ranks is ten times that.
MAX_WORLD_SIZE = 1 << 20
MAX_RANK = MAX_WORLD_SIZE - 1
# At one GPU per host a job could have as many hosts as ranks; 8 per node is usual, so 2**17 nodes is 1M GPUs.
MAX_HOSTS = 1 << 17
# A source's shards are numbered 0..n at <= 1 MiB each: 2**31 shards is 2 PiB of one rank's log. Fits int32,
# so every store (SQLite, PostgreSQL INTEGER) holds it.
MAX_SEQ = (1 << 31) - 1
# Restarts of one job (torchrun --max-restarts, Slurm requeue): thousands would already be a runaway loop.
MAX_ATTEMPT = 1_000_000
# POSIX exit statuses are 0-255 and signals negative; Windows NTSTATUS codes (0xC0000005) need 32 bits unsigned.
MIN_EXIT_CODE, MAX_EXIT_CODE = -(1 << 31), (1 << 32) - 1
# DNS names are at most 253 characters; a pod's FQDN or an address with a port stays under that.
MAX_HOST_LEN = 255
MAX_NAME_LEN = 256  # job_id, cluster, scheduler, team: the store's columns hold 256
MAX_SOURCE_LEN = 512  # a file name; the store's source token (stream|host|name) holds 1,024
MAX_LABELS = 64  # Kubernetes objects carry a few dozen labels at most
MAX_LABEL_KEY_LEN = 128
MAX_LABEL_VALUE_LEN = 1024
# The wire models nest two levels ({"labels": {...}}); JSON nested deeper than this is not a message of ours and
# is refused before it can exhaust the parser's recursion.
MAX_JSON_DEPTH = 32

Rank = Annotated[int, Field(ge=0, le=MAX_RANK)]
Host = Annotated[str, Field(min_length=1, max_length=MAX_HOST_LEN)]
Name = Annotated[str, Field(max_length=MAX_NAME_LEN)]
ExitCode = Annotated[int, Field(ge=MIN_EXIT_CODE, le=MAX_EXIT_CODE)]
WhoKey = Annotated[str, Field(min_length=1, max_length=MAX_HOST_LEN, description="a rank number or a host")]
LabelKey = Annotated[str, Field(min_length=1, max_length=MAX_LABEL_KEY_LEN)]
LabelValue = Annotated[str, Field(max_length=MAX_LABEL_VALUE_LEN)]
# JSON object keys are strings: a rank as a key is its decimal digits (at most 7 for MAX_RANK)
_RANK_NAME: dict[str, JsonValue] = {"pattern": "^(0|[1-9][0-9]{0,6})$", "description": f"a rank, 0..{MAX_RANK}"}


class JobEvent(BaseModel):
    model_config = ConfigDict(extra="forbid")

    job_id: str = Field(min_length=1, max_length=MAX_NAME_LEN)
    cluster: Name | None = None
    scheduler: Name | None = None
    state: JobState
    world_size: int | None = Field(default=None, ge=1, le=MAX_WORLD_SIZE)
    hosts: list[Host] = Field(default_factory=list, max_length=MAX_HOSTS)
    rank_hosts: dict[Rank, Host] = Field(default_factory=dict, max_length=MAX_WORLD_SIZE, description="rank -> host",
                                         json_schema_extra={"propertyNames": _RANK_NAME})
    exit_codes: dict[WhoKey, ExitCode] = Field(default_factory=dict, max_length=MAX_WORLD_SIZE + MAX_HOSTS,
                                               description="rank or host -> exit code")
    started_at: datetime | None = None
    ended_at: datetime | None = None
    team: Name | None = None
    labels: dict[LabelKey, LabelValue] = Field(default_factory=dict, max_length=MAX_LABELS)
    attempt: int = Field(default=0, ge=0, le=MAX_ATTEMPT)
    node_logs: bool | None = Field(default=None, description=(
        "whether a kernel or system log (stream dmesg/syslog) will come from each host in `hosts`: true waits for "
        "them up to group_wait, false not at all, unset a short node wait"))


class LogShard(BaseModel):
    model_config = ConfigDict(extra="forbid")

    job_id: str = Field(min_length=1, max_length=MAX_NAME_LEN)
    rank: Rank | None = None
    host: Host | None = None
    stream: Stream = "stdout"
    seq: int = Field(ge=0, le=MAX_SEQ)
    eof: bool = False
    compression: Compression = "none"
    # no length of its own: the whole message is at most MAX_SHARD_BYTES (validate.py, api/ingest.py)
    data: str = Field(description="log bytes, base64 when compressed, else UTF-8 text")
    source: str | None = Field(default=None, max_length=MAX_SOURCE_LEN, description="original file name, when known")


TERMINAL_STATES = frozenset({"failed", "succeeded", "cancelled", "timeout", "preempted"})


def merged(earlier: JobEvent, later: JobEvent) -> JobEvent:
    """One job attempt's events from several senders as one (the Slurm epilog's nodes and exit codes, torchrun's
    rank → host map): a field the later event sets (not null, not empty) wins; maps (rank_hosts, exit_codes,
    labels) are unioned, the later value winning a key; `hosts` keeps the earlier order and adds the later's new
    names; a late `started` does not undo an end already reported. A later attempt replaces the earlier one's
    event whole. A union past the message bounds (hosts, ranks, labels) keeps the later event alone."""
    if later.job_id != earlier.job_id or later.attempt != earlier.attempt:
        return later
    values: dict[str, Any] = {}
    for name in JobEvent.model_fields:
        old, new = getattr(earlier, name), getattr(later, name)
        if isinstance(new, dict):
            values[name] = {**old, **new}
        elif name == "hosts":
            known = set(old)
            values[name] = old + [h for h in dict.fromkeys(new) if h not in known]
        elif name == "state":
            values[name] = old if new == "started" and old in TERMINAL_STATES else new
        else:
            values[name] = old if new is None else new
    try:
        return JobEvent.model_validate(values)
    except ValidationError:
        return later
