#!/usr/bin/env python3
"""Audit the locked runtime dependencies (deploy/requirements.lock) against PyPI's vulnerability data.

PyPI's JSON API lists, for a release, the advisories that affect it (`vulnerabilities`: PyPA advisory database
and OSV ids, each with the versions that fix it); pip-audit's PyPI service reads the same field. Each pin is
looked up at `/pypi/NAME/VERSION/json`; where an index answers that with 404 (some mirrors serve only the project
page), at `/pypi/NAME/json`, whose `vulnerabilities` are the latest release's: they apply to the pin only when the
pin is that release, and a pin that is not is reported as unverified rather than passed.

    python deploy/audit.py deploy/requirements.lock [--ignore deploy/audit-ignore.txt] [--index URL]

Exit 0: no known vulnerability in a pin (unverified pins are listed); 1: at least one, not ignored; 2: the index
could not be read. An ignore file holds one `ID  reason` a line: an advisory judged not to apply, with why.
Standard library only, so that it runs before anything is installed.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

PYPI = "https://pypi.org/pypi"
_PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[^\s;#]+)")
ATTEMPTS = 3


class Unreadable(Exception):
    """The index could not be read (after retries)."""


@dataclass
class Finding:
    name: str
    version: str
    vulns: list[dict[str, object]] = field(default_factory=list)
    verified: bool = True
    note: str = ""


def pins(lock: Path) -> list[tuple[str, str]]:
    out = []
    for line in lock.read_text().splitlines():
        if (m := _PIN.match(line.strip())) is not None:
            out.append((m["name"], m["version"]))
    return out


def ignored(path: Path | None) -> dict[str, str]:
    if path is None or not path.exists():
        return {}
    out = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            vid, _, reason = line.partition(" ")
            if not reason.strip():
                raise SystemExit(f"audit: {path}: {vid} has no reason; say why it does not apply")
            out[vid] = reason.strip()
    return out


def _get(url: str, timeout: float) -> dict[str, object] | None:
    """The JSON at ``url``; None on 404. Retries 5xx answers and connection errors."""
    for attempt in range(ATTEMPTS):
        try:
            with urllib.request.urlopen(url, timeout=timeout) as answer:
                return dict(json.load(answer))
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            if exc.code < 500 and exc.code != 429:
                raise Unreadable(f"{url}: HTTP {exc.code}") from exc
            error: Exception = exc
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            error = exc
        time.sleep(0.5 * 2**attempt)
    raise Unreadable(f"{url}: {error}")


def check(name: str, version: str, index: str, timeout: float = 10.0) -> Finding:
    release = _get(f"{index}/{name}/{version}/json", timeout)
    if release is not None:
        return Finding(name, version, list(release.get("vulnerabilities") or []))  # type: ignore[call-overload]
    project = _get(f"{index}/{name}/json", timeout)
    if project is None:
        return Finding(name, version, verified=False, note="not on the index")
    latest = str((project.get("info") or {}).get("version", ""))  # type: ignore[union-attr]
    if latest != version:
        return Finding(name, version, verified=False, note=f"the index gives advisories for {latest} only")
    return Finding(name, version, list(project.get("vulnerabilities") or []))  # type: ignore[call-overload]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("lock", type=Path)
    p.add_argument("--ignore", type=Path, default=Path(__file__).with_name("audit-ignore.txt"))
    p.add_argument("--index", default=PYPI, help="a PyPI JSON API root (default %(default)s)")
    args = p.parse_args(argv)
    skip = ignored(args.ignore)
    locked = pins(args.lock)
    if not locked:
        print(f"audit: no name==version pins in {args.lock}", file=sys.stderr)
        return 2
    try:
        findings = [check(name, version, args.index.rstrip("/")) for name, version in locked]
    except Unreadable as exc:
        print(f"audit: could not read the index: {exc}", file=sys.stderr)
        return 2
    bad = 0
    for f in findings:
        for v in f.vulns:
            vid = str(v.get("id"))
            fixed = ", ".join(str(x) for x in v.get("fixed_in") or []) or "no fix released"  # type: ignore[attr-defined]
            if vid in skip or any(str(a) in skip for a in v.get("aliases") or []):  # type: ignore[attr-defined]
                print(f"ignored  {f.name}=={f.version}  {vid}  ({skip.get(vid, 'by alias')})")
                continue
            bad += 1
            print(f"VULNERABLE  {f.name}=={f.version}  {vid}  fixed in: {fixed}  {v.get('link', '')}")
    unverified = [f for f in findings if not f.verified]
    for f in unverified:
        print(f"unverified  {f.name}=={f.version}: {f.note}")
    print(f"audit: {len(findings)} pins, {bad} known vulnerabilities, {len(unverified)} unverified "
          f"({args.index})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
