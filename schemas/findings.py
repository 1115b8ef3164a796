"""Domain models of the core: a matched line (Finding) and who said it."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Role(StrEnum):
    """What a line usually is in a cascade."""

    INITIATING = "initiating"
    COLLATERAL = "collateral"
    EITHER = "either"
    CONTEXT = "context"


class Speaker(BaseModel):
    """Who printed a line, as far as the line, its prefix and its file tell."""

    model_config = ConfigDict(frozen=True)

    rank: int | None = None
    local_rank: int | None = None
    host: str | None = None
    pid: int | None = None
    device: int | None = None  # NCCL's [dev]: the local GPU index, not the rank


class Finding(BaseModel):
    """One catalog match on one log event (a line, or a traceback kept as one event)."""

    model_config = ConfigDict(frozen=True)

    signature: str
    generic: bool = False
    role: Role
    source: str
    line_no: int
    text: str
    speaker: Speaker = Field(default_factory=Speaker)
    time: datetime | None = None
    clock: str | None = None  # "wall", "boot" (dmesg seconds since boot) or None
    fields: dict[str, Any] = Field(default_factory=dict)
    order: int = 0  # global read order, a stable tie-break
    event: int = 0  # line number of the first line of the event (traceback, multi-line message) it belongs to
