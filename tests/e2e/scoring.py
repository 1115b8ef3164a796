"""Shared by the e2e tests: a log diagnosed in process (by the scan engine, or through the CLI as a user runs it),
and whether an answer is right by the rules of the corpus's score.py (../shared/corpus)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from catalog.matcher import Matcher
from firstfault.cli import main
from scan.engine import diagnose_sources
from sources.files import expand


def root_cause(matcher: Matcher, path: Path) -> dict[str, Any]:
    """The diagnosis' root cause of the log (or directory of logs) at ``path``, as JSON; {} when none."""
    diagnosis = json.loads(diagnose_sources(matcher, expand([str(path)]), 2026).model_dump_json())
    return diagnosis["root_cause"] or {}


def class_ok(label: str, rc: dict[str, object], cmap: dict[str, list[str]]) -> bool:
    """The label's failure class is named by the root cause's signature, title or tags: one of the class map's
    alternatives, else every word of the label longer than two letters."""
    hay = " ".join([str(rc.get("signature") or ""), str(rc.get("title") or ""),
                    " ".join(rc.get("tags") or [])]).lower()  # type: ignore[arg-type]
    alts = cmap.get(label)
    if alts:
        return any(a.lower() in hay for a in alts)
    return all(w in hay for w in label.lower().split("_") if len(w) > 2)


def initiating_ok(want: dict[str, object], rc: dict[str, object]) -> bool | None:
    """The label's initiating rank (else host, either name containing the other) is the root cause's; None when
    the label names neither."""
    if want.get("rank") is not None:
        return rc.get("rank") == want["rank"]
    if want.get("host"):
        got, host = str(rc.get("host") or ""), str(want["host"])
        return bool(got) and (got in host or host in got)
    return None


def cli_root_cause(path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """The root cause `firstfault diagnose PATH --format json` prints, run in-process as a user would run it."""
    assert main(["diagnose", str(path), "--format", "json"]) == 0
    rc = json.loads(capsys.readouterr().out)["root_cause"]
    assert isinstance(rc, dict)
    return rc
