"""What a pass of an entry's `verification` command means, machine-readable: the entry's optional `expect`.

The `# expect ...` comment in `verification` stays for people; `expect` is what `firstfault verify` judges by:

    verification: "dmesg -T | grep -c 'Out of memory: Killed process'  # expect no new lines"
    expect:
      count: 0                # the number the command prints last (grep -c, wc -l) equals this
      examples: {pass: ["0"], fail: ["3"]}

Every field given must hold; an entry without `expect` passes on exit status 0, and the judgement says so.
Examples are outputs judged at load: each `pass` one must pass and each `fail` one fail, or the catalog does not
load. Pure: no process is run here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

FALLBACK_EXIT_CODE = 0
_LAST_NUMBER = re.compile(r"(-?\d+)\s*$")


class ExpectExamples(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    passing: list[str] = Field(default_factory=list, alias="pass", description="outputs that must pass")
    failing: list[str] = Field(default_factory=list, alias="fail", description="outputs that must fail")


class Expectation(BaseModel):
    """Every field given must hold. Exit status is checked only when `exit_code` is given: `grep -c` exits 1
    when it counts 0, which is a pass for `count: 0`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    exit_code: int | None = Field(None, ge=0, le=255, description="the command's exit status")
    output_matches: str | None = Field(None, min_length=1, description="a regex the output must contain")
    output_lacks: str | None = Field(None, min_length=1, description="a regex the output must not contain")
    count: int | None = Field(None, ge=0, description="the last number the output ends with equals this")
    examples: ExpectExamples = Field(default_factory=ExpectExamples)

    @field_validator("output_matches", "output_lacks")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value, re.MULTILINE)
            except (re.error, OverflowError, RecursionError) as exc:
                raise ValueError(f"bad regex {value[:80]!r}: {exc}") from exc
        return value

    @model_validator(mode="after")
    def _says_something_and_its_examples_hold(self) -> Expectation:
        if (self.exit_code, self.output_matches, self.output_lacks, self.count) == (None, None, None, None):
            raise ValueError("expect needs at least one of exit_code, output_matches, output_lacks, count")
        exit_code = self.exit_code if self.exit_code is not None else FALLBACK_EXIT_CODE
        for output in self.examples.passing:
            if not (verdict := judge(self, exit_code, output)).passed:
                raise ValueError(f"pass example {output[:80]!r} fails: {verdict.reason}")
        for output in self.examples.failing:
            if judge(self, exit_code, output).passed:
                raise ValueError(f"fail example {output[:80]!r} passes")
        return self

    def describe(self) -> str:
        parts = [f"exit status {self.exit_code}" if self.exit_code is not None else "",
                 f"output matches /{self.output_matches}/" if self.output_matches else "",
                 f"output lacks /{self.output_lacks}/" if self.output_lacks else "",
                 f"count {self.count}" if self.count is not None else ""]
        return ", ".join(p for p in parts if p)


@dataclass(frozen=True)
class Judgement:
    passed: bool
    reason: str  # what held or what did not, for the person reading the result
    criterion: str  # what "pass" meant here
    fallback: bool  # judged by exit status 0 because the entry has no structured `expect`


def judge(expect: Expectation | None, exit_code: int, output: str) -> Judgement:
    """Pass or fail by ``expect``; without one, by exit status 0 (and the judgement says it fell back)."""
    if expect is None:
        passed = exit_code == FALLBACK_EXIT_CODE
        return Judgement(passed, f"exit status {exit_code}", "exit status 0 (the catalog entry has no structured "
                         "`expect`: the fallback)", fallback=True)
    failures = _failures(expect, exit_code, output)
    reason = "; ".join(failures) if failures else f"{expect.describe()}: all hold"
    return Judgement(not failures, reason, expect.describe(), fallback=False)


def _failures(expect: Expectation, exit_code: int, output: str) -> list[str]:
    failures = []
    if expect.exit_code is not None and exit_code != expect.exit_code:
        failures.append(f"exit status {exit_code}, expected {expect.exit_code}")
    if expect.output_matches and not re.search(expect.output_matches, output, re.MULTILINE):
        failures.append(f"output does not match /{expect.output_matches}/")
    if expect.output_lacks and (hit := re.search(expect.output_lacks, output, re.MULTILINE)):
        failures.append(f"output contains {hit.group(0)[:80]!r} (/{expect.output_lacks}/)")
    if expect.count is not None:
        found = _LAST_NUMBER.search(output)
        if found is None:
            failures.append(f"output ends with no number, expected {expect.count}")
        elif int(found.group(1)) != expect.count:
            failures.append(f"count {found.group(1)}, expected {expect.count}")
    return failures
