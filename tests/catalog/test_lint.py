"""`catalog lint`: the bundled catalog is clean, and each kind of problem in a user's catalog is reported."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from catalog.lint import LintReport, lint
from catalog.lint_load import Finding, Level
from catalog.loader import build_catalog, bundled_sources

HEADER = "version: 1\nsignatures:\n"


def entry(sid: str, regex: str, positive: str, negative: str = "all is well", **extra: str) -> str:
    """One catalog entry as a user would write it; ``extra`` replaces or adds top-level keys (raw YAML)."""
    fields = {"title": f"{sid} happened", "category": "other", "severity": "error", "role": "initiating",
              "fingerprints": f"[{{regex: '{regex}'}}]", "meaning": "Something specific went wrong here.",
              "fix": "Mend the thing.", "verification": '"thing --check  # expect ok"',
              "examples": f'{{positive: ["{positive}"], negative: ["{negative}"]}}', **extra}
    body = "".join(f"    {key}: {value}\n" for key, value in fields.items() if value != "")
    return f"  - id: {sid}\n{body}"


def lint_user(*entries: str) -> LintReport:
    """Lint one user file holding ``entries``, alone (no bundled catalog: small and fast)."""
    return lint([], [(Path("mine.yaml"), HEADER + "".join(entries))])


def kinds(report: LintReport, level: Level | None = None) -> list[str]:
    return [f.kind for f in report.findings if level is None or f.level is level]


def only(report: LintReport, kind: str) -> Finding:
    [found] = [f for f in report.findings if f.kind == kind]
    return found


def test_bundled_catalog_has_no_lint_errors() -> None:
    report = lint(bundled_sources())
    errors = [f"{f.entry}: {f.kind}: {f.message} | {f.example}" for f in report.findings if f.level is Level.ERROR]
    print(f"bundled catalog: {report.entries} entries, {report.errors} errors, {report.warnings} warnings")
    assert report.entries > 200
    assert errors == []


def test_a_clean_user_catalog_has_no_findings() -> None:
    report = lint_user(entry("my.thing.broke", "thing broke: (?P<detail>\\w+)", "thing broke: badly"))
    assert report.findings == ()
    assert (report.checked, report.errors, report.warnings) == (1, 0, 0)


def test_an_example_another_entry_wins_is_an_error_naming_the_winner() -> None:
    report = lint_user(entry("my.disk.error", "disk error", "disk error on sda: medium error"),
                       entry("my.disk.medium", "disk error on \\w+: medium error", "disk error on sdb: medium error"))
    lost = only(report, "example-lost")
    assert (lost.level, lost.entry, lost.other) == (Level.ERROR, "my.disk.error", "my.disk.medium")
    assert lost.example == "disk error on sda: medium error"
    assert "fixed text" in lost.message  # says why the other one wins


def test_an_overlap_its_own_entry_wins_is_a_warning_until_the_two_are_related() -> None:
    medium = "disk error on sdb: medium error"
    broad = entry("my.disk.error", "disk error", "disk error on sda")
    specific = entry("my.disk.medium", "disk error on \\w+: medium error", medium)
    report = lint_user(broad, specific)
    overlap = only(report, "overlap")
    assert (overlap.level, overlap.entry, overlap.other, overlap.example) == (
        Level.WARNING, "my.disk.error", "my.disk.medium", medium)
    [contest] = report.contested  # the full picture, for --format json: who matches, who wins
    assert (contest.entry, contest.winner, contest.matched_by) == ("my.disk.medium", "my.disk.medium",
                                                                   ("my.disk.medium", "my.disk.error"))
    linked = entry("my.disk.error", "disk error", "disk error on sda", related="[my.disk.medium]")
    assert lint_user(linked, specific).findings == ()


def test_an_entry_overlapping_many_unlinked_entries_is_reported_once_as_a_catch_all() -> None:
    specifics = [entry(f"my.disk.{kind}", f"disk error: {kind} sector", f"disk error: {kind} sector 7")
                 for kind in ("bad", "worn", "lost")]
    report = lint_user(entry("my.disk.error", "disk error", "disk error somewhere"), *specifics)
    assert kinds(report) == ["catch-all"]
    assert "generic: true" in report.findings[0].message


def test_a_generic_fallback_losing_its_example_to_a_specific_entry_is_the_design() -> None:
    fallback = entry("my.disk.generic", "disk error: (?P<detail>[^\\n]+)", "disk error: bad sector 7",
                     generic="true")
    report = lint_user(fallback, entry("my.disk.bad", "disk error: bad sector", "disk error: bad sector 9"))
    assert kinds(report, Level.ERROR) == []
    assert kinds(report) == ["fallback-unexercised"]  # and it has no example of its own left


def test_a_tie_decided_by_file_order_is_a_warning() -> None:
    report = lint_user(entry("my.disk.first", "disk err.r", "disk error"),
                       entry("my.disk.second", "disk erro.", "disk error here"))
    tie = [f for f in report.findings if f.kind == "tie"]
    assert {(f.entry, f.other) for f in tie} == {("my.disk.first", "my.disk.second")}
    assert kinds(report, Level.ERROR) == ["example-lost"]  # the second one's example goes to the first


def test_stale_examples_are_errors() -> None:
    report = lint_user(entry("my.disk.error", "disk error", "disc error", negative="disk error, relax"))
    assert sorted(kinds(report)) == ["negative-matched", "positive-unmatched"]
    assert all(f.level is Level.ERROR for f in report.findings)


@pytest.mark.parametrize(("change", "kind"), [
    ({"fix": ""}, "missing-fix"),
    ({"fix": "TODO"}, "missing-fix"),
    ({"verification": ""}, "missing-verification"),
    ({"verification": "'  tbd '"}, "missing-verification"),
    ({"related": "[my.no.such]"}, "dangling-related"),
    ({"colour": "red"}, "invalid"),
    ({"fingerprints": "[{regex: 'disk (error'}]"}, "invalid"),
    ({"examples": '{positive: ["disk error\\nsecond line"], negative: ["fine"]}'}, "invalid"),
])
def test_field_problems_are_errors(change: dict[str, str], kind: str) -> None:
    report = lint_user(entry("my.disk.error", "disk error", "disk error here", **change))
    found = only(report, kind)
    assert (found.level, found.file, found.entry) == (Level.ERROR, "mine.yaml", "my.disk.error")


def test_an_invalid_entry_does_not_hide_the_problems_of_the_others() -> None:
    report = lint_user(entry("my.disk.error", "disk error", "disk error here", fix=""),
                       entry("my.disk.other", "disk other", "no match at all"))
    assert sorted(kinds(report)) == ["missing-fix", "positive-unmatched"]


def test_an_entry_missing_its_fix_still_gets_its_other_checks() -> None:
    report = lint_user(entry("my.disk.error", "disk error", "disc error", fix="", related="[my.no.such]"))
    assert sorted(kinds(report)) == ["dangling-related", "missing-fix", "positive-unmatched"]
    assert report.checked == 1


def test_a_fallback_id_without_generic_true_is_an_error() -> None:
    report = lint_user(entry("my.disk.generic", "disk error: (?P<detail>[^\\n]+)", "disk error: anything"))
    assert kinds(report, Level.ERROR) == ["generic-unmarked"]


@pytest.mark.parametrize(("change", "kind"), [
    ({"verification": '"thing --check"'}, "verification-no-expectation"),
    ({"examples": '{positive: ["disk error here"]}'}, "no-negative-example"),
    ({"fingerprints": "[{regex: 'disk'}]"}, "weak-fingerprint"),
])
def test_authoring_slips_are_warnings(change: dict[str, str], kind: str) -> None:
    report = lint_user(entry("my.disk.error", "disk error", "disk error here", **change))
    assert [(f.kind, f.level) for f in report.findings] == [(kind, Level.WARNING)]


def test_duplicate_ids_and_bad_yaml_are_errors() -> None:
    twice = entry("my.disk.error", "disk error", "disk error here")
    report = lint([], [(Path("a.yaml"), HEADER + twice + twice), (Path("b.yaml"), "version: 1\nsignatures: [\n")])
    assert sorted((f.file, f.kind) for f in report.findings) == [("a.yaml", "invalid"), ("b.yaml", "invalid")]
    assert any("duplicate id" in f.message for f in report.findings)


def run(*args: str, env_path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin"}
    if env_path is not None:
        env["FIRSTFAULT_CATALOG_PATH"] = env_path
    return subprocess.run([sys.executable, "-m", "firstfault.cli", *args], capture_output=True, text=True,
                          timeout=120, env=env)


def test_cli_lints_a_user_directory_against_the_bundled_catalog(tmp_path: Path) -> None:
    """A user entry that steals a bundled entry's own example line is reported, and only findings that concern
    the user's files are shown (the bundled catalog's own warnings are not the user's business)."""
    victim = next(s for s in build_catalog(bundled_sources()).signatures if not s.generic)
    line = victim.examples.positive[0]
    # Every punctuation mark as `.`: a regex that pins down the whole line but needs no escaping in YAML.
    thief = entry("my.thief.everything", re.sub(r"[^A-Za-z0-9 ]", ".", line), json.dumps(line)[1:-1])
    (tmp_path / "mine.yaml").write_text(HEADER + thief)
    p = run("catalog", "lint", str(tmp_path), "--format", "json")
    assert p.returncode == 1, p.stderr
    report = json.loads(p.stdout)
    assert report["checked"] == 1 and report["errors"] >= 1
    lost = [f for f in report["findings"] if f["kind"] == "example-lost"]
    assert {(f["entry"], f["other"]) for f in lost} >= {(victim.id, "my.thief.everything")}
    assert all(f["file"] == str(tmp_path / "mine.yaml") or f["other"] == "my.thief.everything"
               for f in report["findings"])


def test_cli_default_is_bundled_plus_catalog_path_and_exits_0_without_errors(tmp_path: Path) -> None:
    (tmp_path / "mine.yaml").write_text(HEADER + entry("my.thing.broke", "thing broke: (?P<detail>\\w+)",
                                                       "thing broke: badly", fix="TODO"))
    p = run("catalog", "lint", env_path=str(tmp_path))
    assert p.returncode == 1
    assert "my.thing.broke: error: missing-fix" in p.stdout
    clean = run("catalog", "lint")
    assert clean.returncode == 0, clean.stdout
    assert re.search(r"catalog lint: \d+ entries in \d+ files: 0 errors, \d+ warnings?", clean.stdout)


def test_cli_lint_of_a_missing_path_is_a_usage_error() -> None:
    p = run("catalog", "lint", "/no/such/catalog")
    assert p.returncode == 2
    assert "no such catalog file or directory" in p.stderr
