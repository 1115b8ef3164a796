"""Property tests of the renderings of a diagnosis: whatever a job printed (huge lines, any unicode, control
characters, markup of every renderer) and however many suspects, groups and lines a diagnosis holds, the Slack
blocks, the PagerDuty event, the Markdown and the terminal report are made without an exception, and the Slack
and PagerDuty payloads stay inside the limits their APIs enforce (checked by the stand-ins' own validators).

Budget: 100 incidents in CI, 10,000 in `make fuzz` (docs/fuzzing.md has the measured times).
"""

from __future__ import annotations

import io
import json
import os
from datetime import UTC, datetime
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

from firstfault.render import render_markdown, render_text
from notifiers.pagerduty import build_event
from notifiers.slack_message import fallback_text, incident_blocks, revision_reply
from schemas.diagnosis import Alternative, CollateralGroup, Diagnosis, Evidence, RootCause, Suspect, TimelineEntry
from schemas.incident import Incident
from schemas.wire import MAX_HOST_LEN, MAX_LABEL_KEY_LEN, MAX_LABEL_VALUE_LEN, MAX_LABELS, MAX_NAME_LEN
from tests.fakes.pagerduty_api import _problems
from tests.fakes.slack_api import check_blocks

# 100 and 50 in CI: the atheris target render (tests/fuzz) runs 10,000 incidents through every renderer;
# `make fuzz` runs 10,000 and 1,000 here
EXAMPLES = int(os.environ.get("FF_FUZZ", "100"))
TERMINAL_EXAMPLES = int(os.environ.get("FF_FUZZ_TERMINAL", "50"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
URL = "https://firstfault.example.org/incidents/inc-0123456789abcdef"
ROUTING_KEY = "R" * 32
MAX_EVENT_BYTES = 512 * 1024
T0 = datetime(2026, 11, 29, 10, 13, 2, tzinfo=UTC)

# what renderers treat specially: Slack's control characters and mentions, code fences, rich's markup, Markdown,
# HTML, bidi and zero-width characters, NUL and the other C0 controls, astral-plane emoji, combining marks
TRICKY = st.sampled_from([
    "<!channel>", "<@U0123>", "<http://x|y>", "&amp;", "```", "``", "`", "*", "_", "~", ">", "[bold]", "[/]",
    "[/bold]", "[link=http://x]", "\\[", "]", "[", "# ", "|", "\x00", "\x1b[31m", "\r", "\n", "\t", "\x7f",
    "\u202e", "\u200b", "\ufeff", "🔥", "👩‍👩‍👧", "é", "\u0301", "𝔘", "\U0010ffff", "%s", "{}", "{0}", "\\",
])
small = st.text(max_size=30) | TRICKY
# a huge string from a small one repeated, up to ~24,000 characters: past every limit (Slack's 3,000 and 12,000),
# cheap to generate; a 10 MB line is a regression test below
huge = st.builds(lambda s, n: s * n, st.text(min_size=1, max_size=8) | TRICKY, st.integers(1, 3_000))
line = small | st.lists(small, max_size=8).map("".join)  # an element of a long list: ordinary sizes
text = line | huge  # a field of its own: any size
opt_text = st.none() | text
host = st.none() | st.text(min_size=1, max_size=MAX_HOST_LEN) | TRICKY  # hosts come from logs and producers
rank = st.none() | st.integers(0, (1 << 20) - 1)
conf = st.floats(0, 1)
signature = st.none() | st.sampled_from(["host.oom_killer", "nccl.bootstrap.connection_reset", "x.y"])
evidence = st.builds(Evidence, source=text, line=st.integers(0, 10**9), text=text)


def _many(strategy: st.SearchStrategy[Any], big: int) -> st.SearchStrategy[list[Any]]:
    """Few (the usual), or very many (a 4,096-rank job's worth): a few drawn, repeated, so that generating and
    shrinking them costs what a short list costs."""
    return st.lists(strategy, max_size=4) | st.builds(lambda few, n: (few * n)[: big * 2], st.lists(
        strategy, min_size=1, max_size=3), st.integers(big, big * 2))


short_evidence = st.builds(Evidence, source=line, line=st.integers(0, 9), text=line)
evidences = st.lists(evidence, max_size=4) | _many(short_evidence, 50)


root_cause = st.builds(RootCause, signature=signature, title=text, category=small, tags=st.lists(small, max_size=5),
                       rank=rank, host=host, confidence=conf, time=st.none() | st.just(T0), evidence=evidences,
                       explanation=st.lists(text, max_size=3) | _many(line, 60))
collateral = st.builds(CollateralGroup, signature=small, ranks=st.lists(st.integers(0, 1 << 20), max_size=50),
                       hosts=st.lists(host.filter(bool), max_size=6), count=st.integers(0, 10**9))
suspect = st.builds(Suspect, rank=rank, host=host, signature=signature, confidence=conf,
                    evidence=st.lists(short_evidence, max_size=2), reasons=st.lists(line, max_size=3))
timeline = st.builds(TimelineEntry, time=st.none() | st.just(T0), rank=rank, host=host, signature=small,
                     role=st.sampled_from(["initiating", "collateral", "context"]), source=opt_text)
alternative = st.builds(Alternative, signature=signature, rank=rank, host=host, confidence=conf)
diagnosis = st.builds(
    Diagnosis, verdict=st.sampled_from(["diagnosed", "suspects", "no_known_signature", "no_failure_found"]),
    root_cause=st.none() | root_cause, collateral=_many(collateral, 100), fix=opt_text, verification=opt_text,
    timeline=st.lists(timeline, max_size=10), alternatives=st.lists(alternative, max_size=10),
    suspects=_many(suspect, 200))
name = st.text(min_size=1, max_size=MAX_NAME_LEN) | TRICKY  # a producer's job id, cluster, team: wire-bounded
incidents = st.builds(
    Incident, id=st.just("inc-0123456789abcdef"), job_id=name, attempt=st.integers(0, 1_000_000),
    cluster=st.none() | name, team=st.none() | name,
    labels=st.dictionaries(st.text(min_size=1, max_size=MAX_LABEL_KEY_LEN), st.text(max_size=MAX_LABEL_VALUE_LEN),
                           max_size=MAX_LABELS),
    state=st.sampled_from(["open", "resolved"]), revision=st.integers(1, 10**6),
    severity=st.sampled_from(["critical", "error", "warning", "info"]), created_at=st.just(T0),
    updated_at=st.just(T0), diagnosis=diagnosis, changes=st.lists(text, max_size=3) | _many(line, 60))


def assert_slack_accepts(blocks: list[dict[str, Any]], fallback: str) -> None:
    """What Slack's API refuses: the stand-in's checks (50 blocks, header 150, section 3,000, 10 fields of 2,000,
    ~12k over all blocks), plus empty texts ("must be more than 0 characters") and a ``text`` over 40,000."""
    check_blocks(blocks)
    for block in blocks:
        for part in [block.get("text"), *block.get("fields", []), *block.get("elements", [])]:
            if part is not None:
                assert part["text"].strip(), f"empty text in a {block['type']} block"
    assert 0 < len(fallback) <= 40_000
    json.dumps(blocks)  # what slack-sdk sends: serialisable


def check_pagerduty_accepts(event: dict[str, Any]) -> None:
    assert _problems(event) == []
    assert len(json.dumps(event).encode()) <= MAX_EVENT_BYTES


@FUZZ
@given(incident=incidents)
def test_every_rendering_of_any_incident_is_made_and_slack_and_pagerduty_accept_it(incident: Incident) -> None:
    """One generated incident feeds every renderer: generating it is most of an input's cost."""
    assert_slack_accepts(incident_blocks(incident, URL), fallback_text(incident, URL))
    text, blocks = revision_reply(incident, URL)
    assert_slack_accepts(blocks, text)
    check_pagerduty_accepts(build_event(incident, ROUTING_KEY, URL))
    d = incident.diagnosis
    out = render_markdown(d)
    assert out.endswith("\n") and (d.root_cause is None or d.verdict == "no_failure_found" or "## " in out)


@settings(FUZZ, max_examples=TERMINAL_EXAMPLES)  # rich lays out every line: 100 ms for a 400-suspect diagnosis
@given(d=diagnosis)
def test_the_terminal_report_is_always_rendered(d: Diagnosis) -> None:
    render_text(d, Console(file=io.StringIO(), width=100, color_system=None))


def _incident(d: Diagnosis) -> Incident:
    return Incident(id="inc-0123456789abcdef", job_id="j", created_at=T0, updated_at=T0, diagnosis=d)


def test_a_host_holding_rich_markup_is_printed_not_parsed() -> None:
    """Found by the fuzzer: an alternative's host (read from a log) went into a rich table unescaped, and
    "[/bold]" raised MarkupError out of `firstfault diagnose`."""
    rc = RootCause(signature="x.y", title="t", category="other", confidence=0.5)
    d = Diagnosis(verdict="diagnosed", root_cause=rc,
                  alternatives=[Alternative(signature="[bold]x.y", rank=1, host="[/bold]node7", confidence=0.2)])
    out = io.StringIO()
    render_text(d, Console(file=out, width=100, color_system=None))
    assert "[/bold]node7" in out.getvalue() and "[bold]x.y" in out.getvalue()


def test_1_mb_lines_and_400_suspects_fit_slack_and_pagerduty() -> None:
    """Evidence is cut to 1,000 characters when a diagnosis is made; an incident stored before that, or built
    by hand, may hold a whole 1 MiB line (the longest the matcher keeps)."""
    line = "x" * (1 << 20)
    rc = RootCause(signature="x.y", title="t" * 10_000, category="other", confidence=0.5,
                   evidence=[Evidence(source="rank0.log", line=1, text=line)] * 6, explanation=[line])
    suspects = [Suspect(rank=i, host=f"node{i}", signature="x.y", confidence=0.1,
                        evidence=[Evidence(source="s", line=1, text=line[:1000])]) for i in range(400)]
    incident = _incident(Diagnosis(verdict="suspects", root_cause=rc, suspects=suspects, fix=line,
                                   verification=line))
    assert_slack_accepts(incident_blocks(incident, URL), fallback_text(incident, URL))
    check_pagerduty_accepts(build_event(incident, ROUTING_KEY, URL))
