"""Lenient loading for `catalog lint`: every problem in every file becomes a finding instead of stopping the load.

The loader (catalog/loader.py) fails on the first bad entry, which is right at start-up; an author fixing a file
wants all of its problems at once. Entries that validate are kept (with the loader's override rule: a user entry
replaces the bundled one of the same id), so the example and overlap checks still run on the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import yaml
from pydantic import ValidationError

from catalog.loader import Catalog, _entry_name, yaml_loader
from catalog.model import Signature

_FILE_KEYS = frozenset({"version", "signatures"})
# What an author leaves in a field meaning "not written yet": as good as missing.
_PLACEHOLDERS = frozenset({"todo", "tbd", "tba", "fixme", "xxx", "n/a", "na", "none", "-", "...", "?"})


class Level(StrEnum):
    ERROR = "error"  # the catalog misleads a diagnosis or cannot load: exit status 1
    WARNING = "warning"  # worth an author's look; the catalog still works


@dataclass(frozen=True)
class Finding:
    level: Level
    kind: str  # a stable, kebab-case name: example-lost, dangling-related, ...
    file: str
    entry: str | None  # the entry id, None for a file-level problem
    message: str
    example: str | None = None  # the example line concerned
    other: str | None = None  # the other entry of an overlap


@dataclass(frozen=True)
class Loaded:
    catalog: Catalog
    findings: list[Finding]
    files: int


def _error(kind: str, file: str, entry: str | None, message: str) -> Finding:
    return Finding(Level.ERROR, kind, file, entry, message)


def _is_missing(value: object) -> bool:
    """Absent, empty or a placeholder; a value of the wrong type is left to the schema's own message."""
    return value is None or (isinstance(value, str) and value.strip().lower().rstrip(".") in _PLACEHOLDERS | {""})


_WHY_REQUIRED = {
    "fix": "every entry tells the reader what to do",
    "verification": "give one runnable command and what it should print",
}


def _field_findings(file: str, name: str, raw: object) -> list[Finding]:
    """Missing or placeholder fix / verification, named as such (pydantic would only say 'Field required')."""
    if not isinstance(raw, dict):
        return []  # the schema says "should be a mapping"
    found = []
    for field_name, why in _WHY_REQUIRED.items():
        value = raw.get(field_name)
        if _is_missing(value):
            shown = "is missing" if value is None else f"is a placeholder ({str(value).strip()!r})"
            found.append(_error(f"missing-{field_name}", file, name, f"`{field_name}` {shown}: {why}"))
    return found


def _validation_findings(file: str, name: str, exc: ValidationError) -> list[Finding]:
    found = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        found.append(_error("invalid", file, name, f"{loc}: {err['msg']}" if loc else err["msg"]))
    return found


def _parse_entry(file: str, raw: object, index: int) -> tuple[Signature | None, list[Finding]]:
    name = _entry_name(raw, index)
    found = _field_findings(file, name, raw)
    if found and isinstance(raw, dict):
        # Reported already; stand in for the missing text so the entry's other checks still run.
        raw = {**raw, **{f.kind.removeprefix("missing-"): "(missing)" for f in found}}
    try:
        return Signature.model_validate(raw), found
    except ValidationError as exc:
        return None, found + _validation_findings(file, name, exc)


def parse_file(path: Path, text: str) -> tuple[list[Signature], list[Finding]]:
    """The valid entries of one catalog file, and a finding for everything wrong with it."""
    file = str(path)
    try:
        data = yaml.load(text, Loader=yaml_loader())
    except yaml.YAMLError as exc:
        return [], [_error("invalid", file, None, f"not valid YAML: {exc}")]
    if not isinstance(data, dict) or not isinstance(data.get("signatures"), list):
        return [], [_error("invalid", file, None, "expected a mapping with 'version: 1' and a 'signatures' list")]
    found = []
    if data.get("version") != 1:
        found.append(_error("invalid", file, None, f"version: expected 1, got {data.get('version')!r}"))
    for key in sorted(set(data) - _FILE_KEYS, key=str):
        found.append(_error("invalid", file, None, f"{key}: unknown top-level key"))
    entries = []
    for index, raw in enumerate(data["signatures"]):
        sig, problems = _parse_entry(file, raw, index)
        found += problems
        if sig is not None:
            entries.append(sig)
    return entries, found


def load_leniently(bundled: Sequence[tuple[Path, str]], user: Sequence[tuple[Path, str]] = ()) -> Loaded:
    """Like loader.build_catalog, but collecting findings. Duplicate ids within a layer are errors (the first
    one is kept); a user entry overrides the bundled one of the same id."""
    entries: dict[str, Signature] = {}
    origin: dict[str, str] = {}
    findings: list[Finding] = []
    for layer in (bundled, user):
        seen: dict[str, str] = {}
        for path, text in layer:
            sigs, problems = parse_file(path, text)
            findings += problems
            for sig in sigs:
                if sig.id in seen:
                    findings.append(_error("invalid", str(path), sig.id, f"duplicate id (first defined in "
                                           f"{seen[sig.id]})"))
                    continue
                seen[sig.id] = str(path)
                entries[sig.id] = sig
                origin[sig.id] = str(path)
    return Loaded(Catalog(tuple(entries.values()), origin), findings, len(bundled) + len(user))
