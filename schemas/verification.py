"""A fix's verification as an incident keeps it: who ran what, when, what came of it and what "pass" meant."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

VerificationStatus = Literal["passed", "failed"]
OUTPUT_EXCERPT_CHARS = 2_000  # of the output's end: where a count, a summary or the error is


class Verification(BaseModel):
    model_config = ConfigDict(extra="forbid")

    status: VerificationStatus
    by: str = Field(min_length=1, max_length=200)
    at: datetime
    command: str = Field(default="", max_length=4_000, description="as run, redacted; empty when not told")
    exit_code: int | None = None
    output_excerpt: str = Field(default="", description="the output's last characters, redacted")
    criterion: str = Field(description="what pass meant: the entry's `expect`, or the exit-status-0 fallback")
    reason: str = Field(description="what held or did not")
    fallback: bool = Field(False, description="judged by exit status 0: the entry has no structured `expect`")
    reported: bool = Field(False, description="run elsewhere and reported here, not run by firstfault")
    stated: bool = Field(False, description="the reporter stated pass or fail; nothing was judged")


def excerpt(output: str, limit: int = OUTPUT_EXCERPT_CHARS) -> str:
    """The end of the output (whole lines where it can), marked when cut."""
    if len(output) <= limit:
        return output
    tail = output[-limit:]
    cut = tail.find("\n")
    tail = tail[cut + 1:] if 0 <= cut < limit // 2 else tail
    return f"… {len(output) - len(tail)} characters before\n{tail}"
