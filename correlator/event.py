"""An event and what evidence points at (a Target). Pure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from catalog.model import Signature
from schemas.findings import Finding, Role

_STALE, _ABOUT_PEER, _SURVIVOR, _ABSENCE = 1, 2, 4, 8  # Event's flags
_NONE_RARE: tuple[None, None] = (None, None)  # (unmapped_peer, waits_on) of nearly every event
_FIELD_NAMES = ("best", "signature", "findings", "reporter", "implicated", "unmapped_peer", "weight", "reason",
                "stale", "waits_on", "about_peer", "survivor", "absence", "role")


@dataclass(frozen=True, slots=True)  # slots: one a rank and line, no dict each (issue 23: memory per rank)
class Target:
    """What a piece of evidence points at: a rank (with its host), or a host, or nothing in particular."""

    rank: int | None
    host: str | None

    @property
    def label(self) -> str:
        if self.rank is not None:
            return f"rank {self.rank}" + (f" ({self.host})" if self.host else "")
        return f"host {self.host}" if self.host else "the job"


class Event:
    """The lines of one message of one process (``findings``, ``best`` the line that decides), the entry it
    matched, whom it is from and whom it implicates, and what later steps learn of it.

    Ten slots, where a dataclass of its fourteen fields took a 144-byte block: its four flags are bits of one
    int, its two rare fields (unmapped_peer, waits_on) one shared pair, and a one-line event's ``findings`` made
    when read (see findings), so that an event takes a 112-byte
    block, the size of the context records correlation lets go of before the events are built (NCCL's init
    and `Using` lines: two a rank), whose freed blocks it then reuses; an allocator's free blocks of one size
    serve no other (issue 23: memory per rank). Equal, and printed, as the dataclass was: field by field."""

    __slots__ = ("_findings", "_flags", "_rare", "best", "implicated", "reason", "reporter", "role", "signature",
                 "weight")

    def __init__(self, best: Finding, signature: Signature, findings: Sequence[Finding], reporter: Target,
                 implicated: Sequence[Target] = (), unmapped_peer: str | None = None, weight: float | None = None,
                 reason: str | None = None, stale: bool = False, waits_on: tuple[Target, Finding] | None = None,
                 about_peer: bool = False, survivor: bool = False, absence: bool = False) -> None:
        self.best = best
        self.signature = signature
        self.findings = findings
        self.reporter = reporter
        self.implicated = implicated
        self.weight = weight  # derived evidence (sequence numbers, dumps) carries its own weight and reason
        self.reason = reason
        self.role: Role = best.role  # the best line's until a step says otherwise: read by nearly every step
        self._flags = (_STALE if stale else 0) | (_ABOUT_PEER if about_peer else 0) | (
            _SURVIVOR if survivor else 0) | (_ABSENCE if absence else 0)
        self._rare: tuple[str | None, tuple[Target, Finding] | None] = _NONE_RARE
        if unmapped_peer is not None or waits_on is not None:
            self._rare = (unmapped_peer, waits_on)

    @property
    def findings(self) -> Sequence[Finding]:
        """Its lines in order: a tuple where build_events makes them. An event of one line holds no tuple of its
        own: ``(best,)`` is made when read (a 48-byte block an event, most events being one line; issue 23)."""
        return (self.best,) if self._findings is None else self._findings

    @findings.setter
    def findings(self, value: Sequence[Finding]) -> None:
        alone = value.__class__ is tuple and len(value) == 1 and value[0] is self.best
        self._findings = None if alone else value

    def _set(self, bit: int, value: bool) -> None:
        self._flags = self._flags | bit if value else self._flags & ~bit

    @property
    def stale(self) -> bool:
        """Printed long before the failure started, and the job carried on: context, not a cause."""
        return bool(self._flags & _STALE)

    @stale.setter
    def stale(self, value: bool) -> None:
        self._set(_STALE, value)

    @property
    def about_peer(self) -> bool:
        """A survivor's transport error naming its peer, whatever its entry implicates."""
        return bool(self._flags & _ABOUT_PEER)

    @about_peer.setter
    def about_peer(self, value: bool) -> None:
        self._set(_ABOUT_PEER, value)

    @property
    def survivor(self) -> bool:
        """A transport error about a peer, made collateral by transport.assign."""
        return bool(self._flags & _SURVIVOR)

    @survivor.setter
    def survivor(self, value: bool) -> None:
        self._set(_SURVIVOR, value)

    @property
    def absence(self) -> bool:
        """Derived from what a rank did not print (absent from a collective): no line of its own."""
        return bool(self._flags & _ABSENCE)

    @absence.setter
    def absence(self, value: bool) -> None:
        self._set(_ABSENCE, value)

    @property
    def unmapped_peer(self) -> str | None:
        """The address a transport error names that no host is known by."""
        return self._rare[0]

    @unmapped_peer.setter
    def unmapped_peer(self, value: str | None) -> None:
        self._rare = (value, self._rare[1]) if value is not None or self._rare[1] is not None else _NONE_RARE

    @property
    def waits_on(self) -> tuple[Target, Finding] | None:
        """A line of it waits where only the main process goes on (implicates: main): that process, and the line."""
        return self._rare[1]

    @waits_on.setter
    def waits_on(self, value: tuple[Target, Finding] | None) -> None:
        self._rare = (self._rare[0], value) if value is not None or self._rare[0] is not None else _NONE_RARE

    def _fields(self) -> tuple[Any, ...]:
        return (self.best, self.signature, self.findings, self.reporter, self.implicated, self.unmapped_peer,
                self.weight, self.reason, self.stale, self.waits_on, self.about_peer, self.survivor, self.absence,
                self.role)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Event)
        return self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]  # mutable and compared by value, as the dataclass was

    def __repr__(self) -> str:
        values = ", ".join(f"{name}={value!r}" for name, value in zip(_FIELD_NAMES, self._fields(), strict=True))
        return f"Event({values})"
