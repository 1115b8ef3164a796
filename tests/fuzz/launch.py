"""`python tests/fuzz/launch.py TARGET [libFuzzer flags] [corpus dirs or an input file]`: one atheris target
under libFuzzer. Firstfault's own packages are imported inside atheris' instrumentation (coverage guides the
mutations; the libraries beneath are C or Rust, or not ours), so this runs before anything imports them; the
targets (tests/fuzz/targets/) import them at their top, for the regression tests to call their checks directly.

A check raises only when a property breaks: an exception that is not the project's own with a reason, or a
rendering outside a service's limits. libFuzzer then writes the input to crash-<sha1> and exits non-zero; the
pytest side (tests/fuzz/runner.py) prints it as the reproducer. Given a file instead of directories, libFuzzer
runs that one input: the reproducer.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from importlib import import_module
from pathlib import Path

# what each target instruments: the packages its inputs go through
PACKAGES = {
    "wire": ("ingest", "schemas", "sources"),
    "shard_data": ("sources", "schemas"),
    "logs": ("sources", "correlator", "catalog", "scan", "schemas"),
    "catalog_file": ("catalog", "schemas"),
    "render": ("notifiers", "firstfault", "schemas", "correlator"),
    "tripwire": (),  # the runner's own test: a target that fails on one input
}
# atheris 2.3.0 miscompiles unended_frame's loop on Python 3.11 (its argument `fh` reads as None inside the
# `while True:`): instrumented, every zstd input would "crash"; and instrumented catalog.rewrite segfaults while
# the matcher is built. Both are left as they are; their callers are instrumented.
UNINSTRUMENTED = ["sources.zstdfile", "catalog.rewrite"]


def main() -> None:
    import atheris  # a dev extra; it exports its API by assignment, which mypy does not see: the ignores below

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `tests.` and the packages
    target_name = sys.argv.pop(1)
    with atheris.instrument_imports(  # type: ignore[attr-defined]
            include=list(PACKAGES[target_name]), exclude=UNINSTRUMENTED):
        target = import_module(f"tests.fuzz.targets.{target_name}")
    check: Callable[[bytes], None] = target.check
    prepare: Callable[[], None] | None = getattr(target, "prepare", None)
    if prepare is not None:
        prepare()  # caches built before the first input, so -timeout measures one input, not start-up
    atheris.Setup(sys.argv, check)  # type: ignore[attr-defined]
    atheris.Fuzz()  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
