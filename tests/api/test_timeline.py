"""The timeline picture: rows, bands for large jobs, the no-clock lane, host-level lines, escaping."""

from __future__ import annotations

import re
from pathlib import Path
from xml.etree import ElementTree

from api.timeline import MAX_ROWS, timeline_svg
from scan.engine import default_matcher, diagnose_sources
from schemas.diagnosis import Diagnosis
from schemas.incident import Incident
from simulate import oom_killed_rank
from sources.files import expand
from tests.api.seed import xid_job

NS = {"svg": "http://www.w3.org/2000/svg"}


def _events(svg: str, role: str) -> list[ElementTree.Element]:
    root = ElementTree.fromstring(svg)  # also proves the SVG is well-formed XML
    return [g for g in root.iter("{http://www.w3.org/2000/svg}g") if g.get("class") == f"event {role}"]


def _row_of(svg: str, rank_label: str) -> float:
    m = re.search(rf'<text class="rowlabel" data-row="(\d+)" x="[\d.]+" y="([\d.]+)"[^>]*>{re.escape(rank_label)}<',
                  svg)
    assert m, f"no row labelled {rank_label}"
    return float(m.group(2))


def _marker_y(g: ElementTree.Element) -> float:
    path = g.find("svg:path", NS)
    assert path is not None
    ys = [float(v) for v in re.findall(r"[ML][\d.]+ ([\d.]+)", path.get("d", ""))]
    return (min(ys) + max(ys)) / 2


def _marker_x(g: ElementTree.Element) -> float:
    """A dot's centre, or a diamond's (its path starts at the top vertex, straight above the centre)."""
    circle = g.find("svg:circle", NS)
    if circle is not None:
        return float(circle.get("cx", 0))
    path = g.find("svg:path", NS)
    assert path is not None
    m = re.match(r"M([\d.]+) ", path.get("d", ""))
    assert m
    return float(m.group(1))


def test_a_512_rank_job_is_drawn_in_bands_with_the_initiator_in_its_band(tmp_path: Path) -> None:
    oom_killed_rank(tmp_path, world_size=512, victim=300, seed=3)
    d = diagnose_sources(default_matcher(), expand([str(tmp_path)]), 2026)
    assert d.root_cause is not None and d.root_cause.rank == 300
    svg = timeline_svg(d)
    assert 0 < svg.count('<rect class="row') <= MAX_ROWS
    assert "ranks (bands of 8)" in svg
    [initiating] = _events(svg, "initiating")
    assert initiating.get("data-rank") == "300"
    # the diamond is centred on the band that holds rank 300: 296-303
    label_y = _row_of(svg, "296-303")
    assert abs(_marker_y(initiating) - label_y) < 8


def test_a_host_level_fault_spans_the_ranks_of_its_host(tmp_path: Path) -> None:
    # Xid 79 on node001 while every rank's watchdog times out, the victim's too: the kernel line names no rank and
    # no rank stands out, so the diagnosis names the host only
    xid_job(tmp_path, victim=10, silent=False)
    d = diagnose_sources(default_matcher(), expand([str(tmp_path)]), 2026)
    assert d.root_cause is not None and (d.root_cause.rank, d.root_cause.host) == (None, "node001")
    svg = timeline_svg(d)
    [initiating] = _events(svg, "initiating")
    assert (initiating.get("data-rank"), initiating.get("data-host")) == ("", "node001")
    bar = initiating.find("svg:rect", NS)
    assert bar is not None  # a bar over node001's ranks 8-15
    top, height = float(bar.get("y", 0)), float(bar.get("height", 0))
    assert top < _row_of(svg, "rank 8") and top + height > _row_of(svg, "rank 14")


def test_a_host_level_fault_sits_on_the_rank_the_diagnosis_names(history: dict[str, Incident]) -> None:
    # Xid 79 on node001, and rank 10 of node001 (the seed's victim) is the one absent from the collective the
    # other 31 ranks time out in: the kernel line is drawn on rank 10's row, not over the host
    d = history["train-xid-2"].diagnosis
    assert d.root_cause is not None and (d.root_cause.rank, d.root_cause.host) == (10, "node001")
    svg = timeline_svg(d)
    markers = _events(svg, "initiating")
    assert {(g.get("data-rank"), g.get("data-host")) for g in markers} == {("10", "node001")}
    [xid] = [g for g in markers if g.get("data-signature") == "xid.79"]
    assert xid.find("svg:rect", NS) is None  # no bar over the host
    assert abs(_marker_y(xid) - _row_of(svg, "rank 10")) < 8


def test_events_without_a_clock_get_their_own_lane(history: dict[str, Incident]) -> None:
    d = history["train-oom-1"].diagnosis
    untimed = [e for e in d.timeline if e.time is None]
    assert untimed, "the seeded OOM job has untimed connection resets"
    svg = timeline_svg(d)
    lane = re.search(r'<rect class="noclock" x="([\d.]+)"', svg)
    assert lane
    # the two connection resets (collateral) and rank 37's absence from the collective (derived from the others'
    # sequence numbers: no line of its own, no time; part of the initiator's failure)
    dots = [g for role in ("collateral", "initiating") for g in _events(svg, role) if g.get("data-time") == "no clock"]
    assert len(dots) == len(untimed)
    for g in dots:
        assert _marker_x(g) > float(lane.group(1))


def test_text_in_the_picture_is_escaped() -> None:
    d = Diagnosis.model_validate({
        "verdict": "diagnosed", "fix": None, "verification": None, "collateral": [], "alternatives": [],
        "root_cause": {"signature": "x.y", "title": "t", "category": "host", "rank": None,
                       "host": '<img src=x onerror="alert(1)">', "confidence": 0.5},
        "timeline": [{"time": None, "rank": None, "host": '<img src=x onerror="alert(1)">', "signature": "x.y",
                      "role": "initiating", "source": "a&b.log", "line": 1}],
    })
    svg = timeline_svg(d)
    assert "<img" not in svg and "&lt;img" in svg
    ElementTree.fromstring(svg)


def test_no_timeline_draws_nothing() -> None:
    assert timeline_svg(Diagnosis(verdict="no_failure_found", root_cause=None)) == ""
