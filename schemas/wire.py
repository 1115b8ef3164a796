"""Wire models of the Kafka topics (design.md): JobEvent on firstfault.jobs, LogShard on firstfault.shards."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

JobState = Literal["started", "failed", "succeeded", "cancelled", "timeout", "preempted"]
Stream = Literal["stdout", "stderr", "dmesg", "syslog", "scheduler", "nccl", "other"]
Compression = Literal["none", "gzip", "zstd"]

MAX_SHARD_BYTES = 1024 * 1024


class JobEvent(BaseModel):
    model_config = ConfigDict(extra="forbid")

    job_id: str = Field(min_length=1, max_length=256)
    cluster: str | None = None
    scheduler: str | None = None
    state: JobState
    world_size: int | None = Field(default=None, ge=1)
    hosts: list[str] = Field(default_factory=list)
    rank_hosts: dict[int, str] = Field(default_factory=dict, description="rank -> host")
    exit_codes: dict[str, int] = Field(default_factory=dict, description="rank or host -> exit code")
    started_at: datetime | None = None
    ended_at: datetime | None = None
    team: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    attempt: int = Field(default=0, ge=0)


class LogShard(BaseModel):
    model_config = ConfigDict(extra="forbid")

    job_id: str = Field(min_length=1, max_length=256)
    rank: int | None = Field(default=None, ge=0)
    host: str | None = None
    stream: Stream = "stdout"
    seq: int = Field(ge=0)
    eof: bool = False
    compression: Compression = "none"
    data: str = Field(description="log bytes, base64 when compressed, else UTF-8 text")
    source: str | None = Field(default=None, description="original file name, when known")
