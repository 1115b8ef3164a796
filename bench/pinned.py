"""A pinned snapshot of the signature catalog, so every measurement of one benchmark run uses the same patterns.

The catalog YAML is edited while benchmarks run (and may be momentarily invalid). ``snapshot(dest)`` copies the
bundled catalog files that parse into ``dest`` and records what it had to leave out; the in-process matchers are
built from that snapshot, and the end-to-end run executes the real CLI (``firstfault.cli.main``) with the loader
pointed at the same snapshot:

    python -m bench.pinned SNAPSHOT_DIR diagnose LOGS --format json

Only the loader's file list is replaced (and, if the snapshot needed it, the cross-reference check of ``related``
ids, which has no effect on matching); everything else is the unmodified code path of ``firstfault diagnose``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import catalog.loader as loader
from catalog.loader import Catalog
from schemas.errors import CatalogError

MANIFEST = "snapshot.json"


def snapshot(dest: Path) -> dict[str, object]:
    """Copy the currently valid bundled catalog files into ``dest``; returns the manifest (also written there)."""
    dest.mkdir(parents=True, exist_ok=True)
    for old in dest.glob("*.yaml"):
        old.unlink()
    kept: list[str] = []
    dropped: dict[str, str] = {}
    files = loader._bundled_files()
    for path, text in files:
        try:
            loader._parse_file(path, text)
        except CatalogError as exc:
            dropped[path.name] = exc.problem[:300]
            continue
        (dest / path.name).write_text(text, encoding="utf-8")
        kept.append(path.name)
    relaxed = ""
    try:
        loader.build_catalog(_files(dest))
    except CatalogError as exc:
        relaxed = str(exc)[:300]  # e.g. a `related` id another engineer has not written yet
    manifest: dict[str, object] = {"source": str(files[0][0].parent) if files else "", "kept": kept,
                                   "dropped": dropped, "related_check_skipped": relaxed}
    (dest / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def _files(dest: Path) -> list[tuple[Path, str]]:
    return [(p, p.read_text(encoding="utf-8")) for p in sorted(dest.glob("*.yaml"))]


def install(dest: Path) -> None:
    """Make ``catalog.loader`` (and so ``default_catalog()``) read the snapshot in ``dest``."""
    manifest = json.loads((dest / MANIFEST).read_text())
    loader._bundled_files = lambda: _files(dest)  # type: ignore[assignment]
    if manifest.get("related_check_skipped"):
        loader._check_related = lambda catalog: None  # type: ignore[assignment]
    loader.default_catalog.cache_clear()


def load(dest: Path) -> Catalog:
    install(dest)
    return loader.default_catalog()


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        sys.stderr.write(__doc__ or "")
        return 2
    install(Path(args[0]))
    from firstfault.cli import main as cli_main

    return cli_main(args[1:])


if __name__ == "__main__":
    sys.exit(main())
