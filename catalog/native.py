"""The one switch between the C line loop (catalog._linescan) and the Python path.

Every function with a C twin (the libhs engine, the line loop and its match_line and captures, the newline
count, the speaker and time-stamp reading, the line plans, the kept context records) asks ``linescan()`` when
its work starts: a matcher is built, a buffer scanned, a source's scanner made. None is asked at import. So one
setting selects the Python path for all of them at once:

- ``FIRSTFAULT_NATIVE=0`` in the environment (any other value, or none, leaves the C loop on where it is built);
- ``firstfault diagnose --engine hyperscan|re`` (Python's line loop around python-hyperscan or ``re``);
  ``--engine libhs`` asks for the C loop whatever the environment says (see ``for_engine``);
- ``switched(False)`` around a block (tests, benches), which wins over the environment while it lasts.

The two paths give the same results (tests/unit/test_native_*.py compare each function; tests/e2e run whole
diagnoses both ways). Where catalog._linescan was not built, or is hidden (``sys.modules`` holds None for it),
everything runs in Python whatever the setting. Work started before a switch keeps the path it started on: a
matcher its engine, a scanner its functions.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

ENV = "FIRSTFAULT_NATIVE"
MODULE = "catalog._linescan"
_overrides: list[bool] = []  # innermost switched() last
_absent: list[bool] = []  # [True] once the import failed with no module on disk: not tried again
_setups: list[Callable[[ModuleType], None]] = []  # what each user hands the C module before first use
_set_up: list[ModuleType] = []  # the module the setups ran on


def built() -> ModuleType | None:
    """catalog._linescan, or None where it was not built or is hidden."""
    module = sys.modules.get(MODULE)  # imported already, most often: a scanner asks once per source
    if module is not None:
        return module
    if _absent or MODULE in sys.modules:  # not built, or hidden (None)
        return None
    try:
        return importlib.import_module(MODULE)
    except ImportError:
        if MODULE not in sys.modules:
            _absent.append(True)
        return None


# os.environ's own store and its spelling of ENV, where it has them (CPython's os._Environ): os.environ.get
# encodes the key and decodes the value in Python frames, 1-2 us a call, and the switch is read twice a source
# (its scanner, its buffer's line loop): 5% of a 20 KB rank file's scan. Every change made through os.environ
# (tests' monkeypatch included) is in that store at once.
_STORE: dict[Any, Any] | None = getattr(os.environ, "_data", None)
_KEY: Any = os.environ.encodekey(ENV) if _STORE is not None and hasattr(os.environ, "encodekey") else None
_OFF: Any = os.environ.encodevalue("0") if _KEY is not None and hasattr(os.environ, "encodevalue") else None


def _switched_on() -> bool:
    """FIRSTFAULT_NATIVE is unset, or anything but "0" (blanks around it ignored)."""
    if _STORE is not None and _OFF is not None:
        value = _STORE.get(_KEY)
        if value is None:
            return True
        if value.strip() == _OFF:  # ASCII blanks: str.strip takes these and a few more, read below
            return False
    return os.environ.get(ENV, "1").strip() != "0"


def enabled() -> bool:
    """Whether work started now takes the C loop: built, and switched on (see the module's docstring)."""
    wanted = _overrides[-1] if _overrides else _switched_on()
    return wanted and built() is not None


def linescan() -> ModuleType | None:
    """catalog._linescan, set up, where the C loop is enabled; None where work takes the Python path."""
    if not enabled():
        return None
    module = built()
    if module is not None and (not _set_up or _set_up[0] is not module):
        for setup in _setups:
            setup(module)
        _set_up[:] = [module]
    return module


def needs_setup(setup: Callable[[ModuleType], None]) -> None:
    """Register what a user hands the C module (its types and limits) before it is first used; run on first use
    (again for a module loaded anew), never at import."""
    _setups.append(setup)
    if _set_up:
        setup(_set_up[0])


def for_engine(engine: str) -> bool | None:
    """What ``--engine`` says of the C loop: libhs wants it, hyperscan and re want the Python path, auto leaves
    it to FIRSTFAULT_NATIVE (None)."""
    return {"libhs": True, "hyperscan": False, "re": False}.get(engine)


@contextmanager
def switched(on: bool | None) -> Iterator[None]:
    """Within the block, the C loop on (True) or off (False) whatever the environment says; None changes
    nothing."""
    if on is None:
        yield
        return
    _overrides.append(on)
    try:
        yield
    finally:
        _overrides.pop()
