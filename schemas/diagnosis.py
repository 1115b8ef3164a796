"""The diagnosis: the JSON contract of `firstfault diagnose --format json` (docs/contracts.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_serializer

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

    @field_serializer("time")
    def _time(self, value: datetime | None) -> str | None:
        return _iso(value)


class CollateralGroup(BaseModel):
    signature: str
    ranks: list[int] = Field(default_factory=list)
    hosts: list[str] = Field(default_factory=list)
    count: int


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
    # What the confidence was computed from (correlator.calibration.Features), for fitting; not serialised.
    _features: dict[str, float] | None = PrivateAttr(default=None)
