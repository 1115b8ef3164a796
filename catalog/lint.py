"""`firstfault catalog lint`: what a catalog author must fix before an entry misleads a diagnosis.

Pure: takes catalog file texts, returns findings. Every example line goes through the real Matcher (the engine
that diagnoses logs), so "its entry wins this line" means what a user would see. Errors (exit status 1):
- an entry that does not validate, lacks a fix or a verification, names a `related` id that does not exist, or
  is named as a fallback (`*.generic`) without `generic: true`;
- a positive example its entry no longer matches, or one another entry of the same kind wins (two entries fighting
  over one line: the matcher's precedence, catalog/matcher.py `specificity`, decides; a specific entry winning over
  a generic one is the design, not a fight); a negative example its entry matches.
Warnings (the catalog works, an author should look):
- a line an entry wins only because its file comes first (a tie in precedence);
- another specific entry matches an example and loses, and neither entry lists the other in `related`: the author
  of one may not know the other exists (an entry doing this to three or more entries is reported once, as a
  catch-all: mark it `generic: true` or link its specific cases);
- a generic fallback that wins none of its own examples, a fingerprint the precedence counts as pinning almost no
  text, a verification without the comment saying what to expect, an entry without a negative example.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from catalog.lint_load import Finding, Level, load_leniently
from catalog.loader import Catalog
from catalog.matcher import Matcher, literal_length, specificity
from catalog.model import Signature

CATCH_ALL_MIN = 3  # undeclared overlaps with this many entries read as a fallback, reported once
WEAK_LITERAL = 8  # a specific fingerprint pinning fewer fixed characters loses to almost any rival on a line
_FALLBACK_ID = re.compile(r"(?:^|[._])(?:generic|fallback)$")

Rank = tuple[int, int, int]


@dataclass(frozen=True)
class Contest:
    """A positive example that more than one specific entry matches, whether or not that is a problem."""

    entry: str  # whose example it is
    example: str
    winner: str | None  # what the matcher picks
    matched_by: tuple[str, ...]  # every specific entry that matches it, the matcher's favourite first


@dataclass(frozen=True)
class LintReport:
    findings: tuple[Finding, ...]
    checked: int  # entries reported on (all of them, or those of the focus files)
    entries: int  # entries in the catalog they were checked against
    files: int
    contested: tuple[Contest, ...] = ()

    @property
    def errors(self) -> int:
        return sum(f.level is Level.ERROR for f in self.findings)

    @property
    def warnings(self) -> int:
        return sum(f.level is Level.WARNING for f in self.findings)

    def to_json(self) -> dict[str, Any]:
        return {"checked": self.checked, "entries": self.entries, "files": self.files, "errors": self.errors,
                "warnings": self.warnings,
                "findings": [{"level": f.level.value, "kind": f.kind, "file": f.file, "entry": f.entry,
                              "other": f.other, "message": f.message, "example": f.example}
                             for f in self.findings],
                "contested": [{"entry": c.entry, "example": c.example, "winner": c.winner,
                               "matched_by": list(c.matched_by)} for c in self.contested]}


@dataclass(frozen=True)
class _Claim:
    """One entry's best fingerprint on one line, ranked as the matcher ranks it."""

    sig: Signature
    regex: str
    rank: Rank


class _Checker:
    def __init__(self, catalog: Catalog, engine: str) -> None:
        self.catalog = catalog
        self.matcher = Matcher(catalog, engine=engine)
        # The matcher compiles each fingerprint with re.ASCII (Hyperscan sees bytes); so do we.
        self.fingerprints = [(sig, fp.regex, re.compile(fp.regex, re.ASCII))
                             for sig in catalog.signatures for fp in sig.fingerprints]
        self.findings: list[Finding] = []
        # Undeclared overlaps, gathered over all examples before any is reported (a catch-all is reported once):
        # rival id -> owner id -> (rival's claim, owner's claim, the line)
        self.overlaps: dict[str, dict[str, tuple[_Claim, _Claim, str]]] = defaultdict(dict)
        self.ties: set[tuple[str, str]] = set()
        self.contested: list[Contest] = []

    def add(self, level: Level, kind: str, sig: Signature, message: str, example: str | None = None,
            other: str | None = None) -> None:
        self.findings.append(Finding(level, kind, self.catalog.origin[sig.id], sig.id, message, example, other))

    def claims(self, line: str) -> dict[str, _Claim]:
        best: dict[str, _Claim] = {}
        for sig, regex, compiled in self.fingerprints:
            if compiled.search(line):
                rank = specificity(sig, regex)
                if sig.id not in best or rank > best[sig.id].rank:
                    best[sig.id] = _Claim(sig, regex, rank)
        return best

    def winners(self) -> dict[str, Signature | None]:
        """What the matcher, engine and all, picks for every example line (one scan of all of them)."""
        lines = sorted({ex for s in self.catalog.signatures for ex in (*s.examples.positive, *s.examples.negative)})
        buffer = "\n".join(lines).encode()
        starts, offset = [], 0
        for line in lines:
            starts.append(offset)
            offset += len(line.encode()) + 1
        found = {m.start: m.signature for m in self.matcher.match(buffer)}
        return {line: found.get(start) for line, start in zip(lines, starts, strict=True)}


def _related(a: Signature, b: Signature) -> bool:
    return b.id in a.related or a.id in b.related


def _why_wins(winner: _Claim, loser: _Claim) -> str:
    if winner.rank == loser.rank:
        return "equal precedence, so the entry whose file comes first wins"
    if winner.rank[0] != loser.rank[0]:
        return "a specific entry beats a generic one"
    if winner.rank[1] != loser.rank[1]:
        return f"its fingerprint pins down {winner.rank[1]} characters of fixed text against {loser.rank[1]}"
    return f"equal fixed text ({winner.rank[1]} characters), its pattern is longer"


def _check_positive(ck: _Checker, sig: Signature, line: str, winner: Signature | None) -> bool:
    """Report what is wrong with one positive example; True when the entry itself wins the line."""
    claims = ck.claims(line)
    own = claims.get(sig.id)
    if own is None:
        ck.add(Level.ERROR, "positive-unmatched", sig, "no fingerprint of this entry matches its positive example",
               line)
        return False
    specific = sorted((c for c in claims.values() if not c.sig.generic), key=lambda c: c.rank, reverse=True)
    if len(specific) > 1:
        ck.contested.append(Contest(sig.id, line, winner.id if winner else None, tuple(c.sig.id for c in specific)))
    if winner is None:
        ck.add(Level.ERROR, "example-lost", sig, "the matcher reports no entry for its positive example", line)
        return False
    if winner.id != sig.id:
        if sig.generic and not winner.generic:
            return False  # a specific entry taking a fallback's line is the design
        won_by = claims.get(winner.id)
        why = f"{_why_wins(won_by, own)} (`{won_by.regex}`)" if won_by else "the matcher's choice"
        ck.add(Level.ERROR, "example-lost", sig, f"its positive example goes to {winner.id}: {why}", line, winner.id)
        return False
    for rival in claims.values():
        if rival.sig.id == sig.id or rival.sig.generic != sig.generic:
            continue
        if rival.rank == own.rank and (sig.id, rival.sig.id) not in ck.ties:  # fallbacks too: file order decides
            ck.ties.add((sig.id, rival.sig.id))
            ck.add(Level.WARNING, "tie", sig, f"wins its example only because its file comes before "
                   f"{rival.sig.id}'s (equal precedence {own.rank}); lengthen the fixed text of one of them",
                   line, rival.sig.id)
        elif rival.rank != own.rank and not rival.sig.generic and not _related(sig, rival.sig):
            ck.overlaps[rival.sig.id].setdefault(sig.id, (rival, own, line))
    return True


def _check_examples(ck: _Checker) -> None:
    winners = ck.winners()
    for sig in ck.catalog.signatures:
        won = [_check_positive(ck, sig, line, winners[line]) for line in sig.examples.positive]
        if sig.generic and not any(won):
            ck.add(Level.WARNING, "fallback-unexercised", sig, "specific entries win every positive example of "
                   "this fallback: add one that only the fallback catches, so a test shows it still works")
        for line in sig.examples.negative:
            hit = next((regex for s, regex, rx in ck.fingerprints if s.id == sig.id and rx.search(line)), None)
            if hit is not None:
                ck.add(Level.ERROR, "negative-matched", sig, f"its negative example matches its fingerprint `{hit}`",
                       line)


def _report_overlaps(ck: _Checker) -> None:
    for rival_id, owners in sorted(ck.overlaps.items()):
        rival = ck.catalog.get(rival_id)
        assert rival is not None
        if len(owners) >= CATCH_ALL_MIN:
            ck.add(Level.WARNING, "catch-all", rival, f"matches (and loses) positive examples of {len(owners)} "
                   f"entries not linked to it: {', '.join(sorted(owners))}. If it is a fallback mark it "
                   "`generic: true`; if those are its specific cases, list them in `related`")
            continue
        for owner_id, (claim, own, line) in sorted(owners.items()):
            ck.add(Level.WARNING, "overlap", rival, f"also matches a positive example of {owner_id}, which wins "
                   f"({_why_wins(own, claim)}), and neither lists the other in `related`: narrow `{claim.regex}` or "
                   "link the two so a reader of either page finds the other", line, owner_id)


def _check_fields(ck: _Checker) -> None:
    ids = {s.id for s in ck.catalog.signatures}
    for sig in ck.catalog.signatures:
        for rel in sig.related:
            if rel not in ids:
                ck.add(Level.ERROR, "dangling-related", sig, f"related id {rel!r} is not in the catalog", other=rel)
        if _FALLBACK_ID.search(sig.id) and not sig.generic:
            ck.add(Level.ERROR, "generic-unmarked", sig, "its id names a fallback but it lacks `generic: true`, so "
                   "it competes with specific entries and a match reads as a known cause")
        for line in (*sig.examples.positive, *sig.examples.negative):
            if "\n" in line.rstrip("\n"):
                ck.add(Level.ERROR, "invalid", sig, "an example holds a line break: the matcher reads one line at a "
                       "time, so write each line as its own example", line)
        if "#" not in sig.verification:
            ck.add(Level.WARNING, "verification-no-expectation", sig, "the verification command has no "
                   "`# expect ...` comment saying what a fixed system prints")
        if not sig.examples.negative:
            ck.add(Level.WARNING, "no-negative-example", sig, "no negative example: add a near-miss (a sibling's "
                   "line, an INFO line) that must not match")
        if sig.generic:
            continue
        for fp in sig.fingerprints:
            if literal_length(fp.regex) < WEAK_LITERAL:
                ck.add(Level.WARNING, "weak-fingerprint", sig, f"the matcher's precedence counts only "
                       f"{literal_length(fp.regex)} characters of fixed text in `{fp.regex}`, so any other specific "
                       "entry that matches the same line wins it")


def _in_focus(f: Finding, files: Collection[str] | None, ids: Collection[str]) -> bool:
    return files is None or f.file in files or (f.other is not None and f.other in ids)


def lint(bundled: Sequence[tuple[Path, str]], user: Sequence[tuple[Path, str]] = (), *,
         focus: Collection[str] | None = None, engine: str = "auto") -> LintReport:
    """Lint the catalog built from these files (as loader.build_catalog builds it). With ``focus`` (file names),
    report only findings on entries from those files or overlaps involving them."""
    loaded = load_leniently(bundled, user)
    ck = _Checker(loaded.catalog, engine)
    _check_fields(ck)
    _check_examples(ck)
    _report_overlaps(ck)
    focus_ids = {i for i, src in loaded.catalog.origin.items() if focus is not None and src in focus}
    found = [f for f in (*loaded.findings, *ck.findings) if _in_focus(f, focus, focus_ids)]
    found.sort(key=lambda f: (f.level is not Level.ERROR, f.file, f.entry or "", f.kind))
    contested = [c for c in ck.contested if focus is None or focus_ids.intersection((c.entry, *c.matched_by))]
    checked = len(focus_ids) if focus is not None else len(loaded.catalog)
    return LintReport(tuple(found), checked, len(loaded.catalog), loaded.files, tuple(contested))
