"""Domain objects of the core: a matched line (Finding) and who said it (Speaker).

Plain slotted dataclasses, not pydantic models: the correlator reads their attributes hundreds of thousands of
times a diagnosis (35,000 findings at 4,096 ranks), and a pydantic model's attribute costs ~8x a slot's (its
class defines ``__getattr__``, which Python 3.11 cannot specialise): correlation took 13% fewer instructions.
Where findings cross a boundary as JSON (the distributed pipeline's shards), ``finding_from_json`` validates
them and ``finding_json`` writes them, through pydantic.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import TypeAdapter


class Role(StrEnum):
    """What a line usually is in a cascade."""

    INITIATING = "initiating"
    COLLATERAL = "collateral"
    EITHER = "either"
    CONTEXT = "context"


@dataclass(frozen=True, slots=True)
class Speaker:
    """Who printed a line, as far as the line, its prefix and its file tell."""

    rank: int | None = None
    local_rank: int | None = None
    host: str | None = None
    pid: int | None = None
    device: int | None = None  # NCCL's [dev]: the local GPU index, not the rank


@dataclass(slots=True, kw_only=True)
class Finding:
    """One catalog match on one log event (a line, or a traceback kept as one event).

    Treated as immutable once made (the scanner's findings share their Speaker); not frozen, because a frozen
    slotted dataclass pickles through Python code and the pool pickles 17,000 findings a run."""

    signature: str
    generic: bool = False
    role: Role
    source: str
    line_no: int
    text: str
    speaker: Speaker = field(default_factory=Speaker)
    time: datetime | None = None
    clock: str | None = None  # "wall", "boot" (dmesg seconds since boot) or None
    fields: dict[str, Any] = field(default_factory=dict)
    order: int = 0  # global read order, a stable tie-break
    event: int = 0  # line number of the first line of the event (traceback, multi-line message) it belongs to
    repeats: int = 0  # later events of its row that a diagnosis's scan left out (a flood: correlator/floods.py)


@cache
def _adapter() -> TypeAdapter[Finding]:
    from pydantic import TypeAdapter  # built on first use: `firstfault diagnose` never needs it

    return TypeAdapter(Finding)


def finding_from_json(data: Any) -> Finding:
    """A Finding from its JSON form (finding_json), validated: pydantic's ValidationError if it is not one."""
    return _adapter().validate_python(data)


def finding_json(finding: Finding) -> dict[str, Any]:
    """A Finding as JSON-ready values (its time ISO 8601, its role a string)."""
    dumped: dict[str, Any] = _adapter().dump_python(finding, mode="json")
    return dumped
