"""Load and validate the signature catalog: the bundled YAML plus FIRSTFAULT_CATALOG_PATH overrides."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache, cached_property
from importlib import resources
from pathlib import Path

from pydantic import ValidationError

from catalog.model import CatalogFile, Signature
from schemas.errors import CatalogError

BUNDLED_DIR = "signatures"


@dataclass(frozen=True)
class Catalog:
    """The validated catalog, in a stable order (file name, then position in the file)."""

    signatures: tuple[Signature, ...]
    origin: dict[str, str] = field(default_factory=dict)  # id -> file it came from

    def get(self, signature_id: str) -> Signature | None:
        return self._by_id.get(signature_id)

    @cached_property
    def _by_id(self) -> dict[str, Signature]:  # built once: the correlator asks once per finding
        return {s.id: s for s in self.signatures}

    def __len__(self) -> int:
        return len(self.signatures)

    def search(self, text: str) -> list[Signature]:
        """Entries whose text, examples or fingerprints mention every word of ``text``, or that match it."""
        words = text.lower().split()
        hits = []
        for sig in self.signatures:
            hay = " ".join([sig.id, sig.title, sig.meaning, *sig.tags, *sig.examples.positive,
                            *(fp.regex for fp in sig.fingerprints)]).lower()
            if all(w in hay for w in words) or any(re.search(fp.regex, text) for fp in sig.fingerprints):
                hits.append(sig)
        return hits


def _entry_name(raw: object, index: int) -> str:
    if isinstance(raw, dict) and isinstance(raw.get("id"), str):
        return str(raw["id"])
    return f"entry #{index}"


def yaml_loader() -> type:
    """libyaml's SafeLoader, ~15x faster than the pure-Python one (start-up time matters for a CLI)."""
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _parse_file(path: Path, text: str) -> list[Signature]:
    import yaml  # here: a start-up with the catalog cached parses no YAML and need not import it

    try:
        data = yaml.load(text, Loader=yaml_loader())
    except yaml.YAMLError as exc:
        raise CatalogError(str(path), None, f"not valid YAML: {exc}") from exc
    except RecursionError as exc:  # without libyaml (and its depth limit) PyYAML recurses once per level
        raise CatalogError(str(path), None, "not valid YAML: nested too deep") from exc
    if not isinstance(data, dict):
        raise CatalogError(str(path), None, "expected a mapping with 'version' and 'signatures'")
    raw_entries = data.get("signatures")
    if isinstance(raw_entries, list):
        # Validate entry by entry so the error names the entry, not a list index deep in pydantic's output.
        for index, raw in enumerate(raw_entries):
            try:
                Signature.model_validate(raw)
            except ValidationError as exc:
                raise CatalogError(str(path), _entry_name(raw, index), _short(exc)) from exc
    try:
        return CatalogFile.model_validate(data).signatures
    except ValidationError as exc:
        raise CatalogError(str(path), None, _short(exc)) from exc


def _short(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        parts.append(f"{loc}: {err['msg']}" if loc else err["msg"])
    return "; ".join(parts)


def _bundled_files() -> list[tuple[Path, str]]:
    root = resources.files("catalog") / BUNDLED_DIR
    found = []
    for item in sorted(root.iterdir(), key=lambda p: p.name):
        if item.name.endswith((".yaml", ".yml")):
            found.append((Path(str(item)), item.read_text(encoding="utf-8")))
    return found


def _user_files(directories: Iterable[str]) -> list[tuple[Path, str]]:
    found = []
    for directory in directories:
        root = Path(directory)
        if not root.is_dir():
            raise CatalogError(str(root), None, "FIRSTFAULT_CATALOG_PATH names a directory that does not exist")
        for path in sorted(root.glob("*.y*ml")):
            try:
                found.append((path, path.read_text(encoding="utf-8")))
            except (OSError, UnicodeDecodeError) as exc:  # a directory named x.yaml, a file in Latin-1
                raise CatalogError(str(path), None, f"cannot read it: {exc}") from exc
    return found


def bundled_sources() -> list[tuple[Path, str]]:
    """The bundled catalog files and their text (what `catalog lint` checks by default)."""
    return _bundled_files()


def env_sources(extra_paths: str | None) -> list[tuple[Path, str]]:
    """The files of the directories in ``extra_paths`` (FIRSTFAULT_CATALOG_PATH's format)."""
    return _user_files(d for d in (extra_paths or "").split(os.pathsep) if d)


def read_sources(paths: Iterable[str]) -> list[tuple[Path, str]]:
    """Catalog files named directly, or found in the directories named (*.yaml, *.yml), and their text."""
    found = []
    for name in paths:
        path = Path(name)
        if not path.exists():
            raise CatalogError(name, None, "no such catalog file or directory")
        try:
            found += _user_files([name]) if path.is_dir() else [(path, path.read_text(encoding="utf-8"))]
        except (OSError, UnicodeDecodeError) as exc:
            raise CatalogError(name, None, f"cannot read it: {exc}") from exc
    return found


def build_catalog(bundled: Sequence[tuple[Path, str]], user: Sequence[tuple[Path, str]] = ()) -> Catalog:
    """Validate files into one catalog. Duplicate ids within the bundled set fail; user files override."""
    entries: dict[str, Signature] = {}
    origin: dict[str, str] = {}
    for path, text in bundled:
        for sig in _parse_file(path, text):
            if sig.id in entries:
                raise CatalogError(str(path), sig.id, f"duplicate id (first defined in {origin[sig.id]})")
            entries[sig.id] = sig
            origin[sig.id] = str(path)
    seen_user: dict[str, str] = {}
    for path, text in user:
        for sig in _parse_file(path, text):
            if sig.id in seen_user:
                raise CatalogError(str(path), sig.id, f"duplicate id (first defined in {seen_user[sig.id]})")
            seen_user[sig.id] = str(path)
            entries[sig.id] = sig  # a user entry with a bundled id overrides it
            origin[sig.id] = str(path)
    catalog = Catalog(tuple(entries.values()), origin)
    _check_related(catalog)
    return catalog


def _check_related(catalog: Catalog) -> None:
    ids = {s.id for s in catalog.signatures}
    for sig in catalog.signatures:
        for rel in (*sig.related, *sig.yields_to):
            if rel not in ids:
                raise CatalogError(catalog.origin[sig.id], sig.id, f"related id {rel!r} is not in the catalog")


def load_catalog(extra_paths: str | None = None) -> Catalog:
    """The bundled catalog plus the directories in ``extra_paths`` (os.pathsep-separated)."""
    dirs = [d for d in (extra_paths or "").split(os.pathsep) if d]
    return build_catalog(_bundled_files(), _user_files(dirs))


@cache
def default_catalog() -> Catalog:
    return load_catalog(os.environ.get("FIRSTFAULT_CATALOG_PATH"))
