"""The diagnosis: the JSON contract of `firstfault diagnose --format json` (docs/contracts.md)."""

from __future__ import annotations

import heapq
from collections.abc import Collection, Iterable
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_serializer, model_validator

from schemas.impact import Impact

# "suspects": a failure was found, but the evidence is too thin to name one initiator (calibrated confidence under
# correlator.calibration.SUSPECTS_BELOW): root_cause holds the likeliest, `suspects` the ranked candidates.
Verdict = Literal["diagnosed", "suspects", "no_known_signature", "no_failure_found"]
TimelineRole = Literal["initiating", "collateral", "context"]


def _iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    text = value.isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")


class Evidence(BaseModel):
    model_config = ConfigDict(frozen=True)

    source: str
    line: int
    text: str


class GpuIdentity(BaseModel):
    """The GPU a root cause is about, as the logs name it: what a hardware ticket (RMA) needs."""
    model_config = ConfigDict(frozen=True)

    pci_bus_id: str = Field(description="domain:bus:device, as the driver prints it (0000:3b:00)")
    uuid: str | None = Field(None, description="GPU-…, from the driver's first report of the GPU")
    serial: str | None = Field(None, description="the board's serial number, when the driver printed it")

    def label(self) -> str:
        """"0000:5d:00 (GPU-f190…, serial 1653923026510)": what to quote in a hardware ticket."""
        known = [k for k in (self.uuid, f"serial {self.serial}" if self.serial else None) if k]
        return f"{self.pci_bus_id} ({', '.join(known)})" if known else self.pci_bus_id


class RootCause(BaseModel):
    signature: str | None
    title: str
    category: str
    tags: list[str] = Field(default_factory=list)
    rank: int | None = None
    host: str | None = None
    confidence: float
    time: datetime | None = None
    evidence: list[Evidence] = Field(default_factory=list)
    explanation: list[str] = Field(default_factory=list)
    gpu: GpuIdentity | None = None
    # what the failing line said, where no specific catalog entry names the cause (the title then carries it)
    message: str | None = None

    @field_serializer("time")
    def _time(self, value: datetime | None) -> str | None:
        return _iso(value)


# A collateral group of a 131,072-rank job names every rank: listed whole, its ranks and hosts would be megabytes
# of JSON in every stored revision. Past these bounds the lists hold the lowest ranks and the first hosts by name,
# the counts say how many there are, and the spans say which ranks, as runs (the first MAX_RANK_SPANS of them).
MAX_LISTED_RANKS = 1024
MAX_LISTED_HOSTS = 256
MAX_RANK_SPANS = 64


def rank_spans(ranks: Iterable[int], limit: int = MAX_RANK_SPANS) -> list[tuple[int, int]]:
    """[0, 1, 2, 3, 5, 7, 8, 9] -> [(0, 3), (5, 5), (7, 9)]: the first ``limit`` runs of consecutive ranks."""
    spans: list[tuple[int, int]] = []
    for rank in sorted(set(ranks)):
        if spans and rank == spans[-1][1] + 1:
            spans[-1] = (spans[-1][0], rank)
        elif len(spans) == limit:
            break
        else:
            spans.append((rank, rank))
    return spans


class CollateralGroup(BaseModel):
    signature: str
    ranks: list[int] = Field(default_factory=list)  # the lowest MAX_LISTED_RANKS of them
    hosts: list[str] = Field(default_factory=list)  # the first MAX_LISTED_HOSTS by name
    count: int
    rank_count: int = 0  # how many ranks printed it (all of them, listed or not)
    host_count: int = 0
    rank_spans: list[tuple[int, int]] = Field(default_factory=list)  # the ranks as runs [first, last]

    @model_validator(mode="after")
    def _counted(self) -> CollateralGroup:
        """A group stored before the counts and spans existed listed every rank and host: derive them. After
        validation, not before: stored JSON whose ranks are no list of numbers (`[{}]`, `5`) is then pydantic's
        ValidationError, where counting it raised TypeError past every caller (found by tests/fuzz's render)."""
        given = self.model_fields_set
        if "rank_count" not in given:
            self.rank_count = len(self.ranks)
        if "host_count" not in given:
            self.host_count = len(self.hosts)
        if "rank_spans" not in given:
            self.rank_spans = rank_spans(self.ranks)
        return self

    @classmethod
    def of(cls, signature: str, ranks: Collection[int], hosts: Collection[str], count: int) -> CollateralGroup:
        """The group of everyone who printed ``signature``, its lists bounded."""
        return cls(signature=signature, ranks=heapq.nsmallest(MAX_LISTED_RANKS, ranks),
                   hosts=heapq.nsmallest(MAX_LISTED_HOSTS, hosts), count=count, rank_count=len(ranks),
                   host_count=len(hosts), rank_spans=rank_spans(ranks))

    def spanned_ranks(self) -> set[int]:
        """Every rank listed or in a span: all of them unless there are more than MAX_LISTED_RANKS in more than
        MAX_RANK_SPANS runs."""
        return {*self.ranks, *(r for first, last in self.rank_spans for r in range(first, last + 1))}


class TimelineEntry(BaseModel):
    time: datetime | None
    rank: int | None
    host: str | None
    signature: str
    role: TimelineRole
    source: str | None = None
    line: int | None = None

    @field_serializer("time")
    def _time(self, value: datetime | None) -> str | None:
        return _iso(value)


class Alternative(BaseModel):
    signature: str | None
    rank: int | None
    host: str | None
    confidence: float


class Suspect(BaseModel):
    """One candidate initiator of a `suspects` verdict, likeliest first; `confidence` is a probability."""

    rank: int | None
    host: str | None
    signature: str | None
    confidence: float
    evidence: list[Evidence] = Field(default_factory=list)
    reasons: list[str] = Field(default_factory=list)


class Diagnosis(BaseModel):
    verdict: Verdict
    root_cause: RootCause | None
    collateral: list[CollateralGroup] = Field(default_factory=list)
    fix: str | None = None
    verification: str | None = None
    timeline: list[TimelineEntry] = Field(default_factory=list)
    alternatives: list[Alternative] = Field(default_factory=list)
    suspects: list[Suspect] = Field(default_factory=list)  # filled when verdict is "suspects"
    impact: Impact | None = None  # what the failure cost (correlator/impact.py); None when the logs cannot tell
    # What the confidence was computed from (correlator.calibration.Features), for fitting; not serialised.
    _features: dict[str, float] | None = PrivateAttr(default=None)
