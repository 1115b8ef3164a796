"""The Slack post: what on-call sees, within Slack's limits (checked by the fake's validator), never pinging."""

from __future__ import annotations

import json
from typing import Any

import pytest

from notifiers.slack_message import (
    HEADER_CHARS,
    MAX_BLOCKS,
    fallback_text,
    fit_lines,
    incident_blocks,
    revision_reply,
)
from schemas.text import rank_ranges
from tests.fakes.slack_api import check_blocks
from tests.notifiers.conftest import make_incident

URL = "https://firstfault.example.org/incidents/inc-1"


def texts(blocks: list[dict[str, Any]]) -> str:
    return json.dumps(blocks, ensure_ascii=False)


def test_the_post_says_what_failed_where_why_what_to_do_and_how_to_verify() -> None:
    blocks = incident_blocks(make_incident(), URL)
    check_blocks(blocks)
    assert blocks[0]["type"] == "header"
    assert "Linux OOM killer" in blocks[0]["text"]["text"] and "train-llama-70b-4821" in blocks[0]["text"]["text"]
    body = texts(blocks)
    for expected in ("rank 37 on node004", "host.oom_killer", "87%", "Why this one", "63×",
                     "pytorch.c10d.watchdog_timeout", "ranks 0-36,38-63", "Reduce host memory",
                     "```dmesg -T | grep -c 'Out of memory: Killed process'", "node004/dmesg.log:3",
                     f"<{URL}|Open incident"):
        assert expected in body, expected


@pytest.mark.parametrize("hostile", ["<!channel> the job is down", "ping <@U024BE7LH> now", "<!here|here>",
                                     "<https://evil.example|click me>", "a && b > c"])
def test_log_text_never_renders_as_a_mention_or_a_link(hostile: str) -> None:
    incident = make_incident(evidence=[hostile])
    incident.diagnosis.root_cause.explanation.append(hostile)  # type: ignore[union-attr]
    body = texts(incident_blocks(incident, URL)) + fallback_text(incident, URL)
    assert "<!" not in body and "<@" not in body and "<https://evil" not in body
    assert hostile.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") in body


def test_a_code_fence_inside_a_log_line_cannot_close_the_evidence_block() -> None:
    blocks = incident_blocks(make_incident(evidence=["```<!channel>```"]), URL)
    evidence = next(b["text"]["text"] for b in blocks if b.get("text", {}).get("text", "").startswith("*Evidence*"))
    assert evidence.count("```") == 2


def test_thousands_of_evidence_lines_are_cut_with_a_count_and_stay_within_limits() -> None:
    lines = [f"[rank{i}]: NCCL WARN Call to recv from 10.0.{i % 250}.7<4312> failed : Connection reset by peer"
             for i in range(5000)]
    blocks = incident_blocks(make_incident(evidence=lines), URL)
    check_blocks(blocks)  # raises like Slack would: invalid_blocks / msg_blocks_too_long
    assert len(blocks) <= MAX_BLOCKS
    body = texts(blocks)
    assert "[rank0]:" in body
    shown = body.count("Connection reset by peer")
    assert f"… {5000 - shown} more lines" in body


def test_a_long_title_and_job_id_fit_the_150_character_header() -> None:
    incident = make_incident(job_id="j" * 300)
    header = incident_blocks(incident, URL)[0]["text"]["text"]
    assert len(header) == HEADER_CHARS and header.endswith("…")


def test_huge_explanations_fix_and_verification_are_clipped_to_slacks_limits() -> None:
    incident = make_incident(evidence=["x" * 10_000] * 30)
    incident.diagnosis.fix = "f" * 20_000
    incident.diagnosis.verification = "v" * 20_000
    incident.diagnosis.root_cause.explanation = ["e" * 5_000] * 50  # type: ignore[union-attr]
    check_blocks(incident_blocks(incident, URL))


def test_the_fallback_text_names_the_failure_and_links_the_incident() -> None:
    text = fallback_text(make_incident(), URL)
    assert "Linux OOM killer" in text and "rank 37 on node004" in text and text.endswith(f"<{URL}>")


def test_a_revision_reply_lists_what_changed_and_a_resolution_says_resolved() -> None:
    revised = make_incident(revision=2, changes=["initiating rank 37 → 12 after node002's dmesg arrived"])
    text, blocks = revision_reply(revised, URL)
    check_blocks(blocks)
    assert text.startswith("Revision 2") and "node002's dmesg" in texts(blocks)
    text, _ = revision_reply(make_incident(revision=3, state="resolved", changes=["job resubmitted, passed"]), URL)
    assert text.startswith("Resolved")
    assert incident_blocks(make_incident(state="resolved"), URL)[0]["text"]["text"].startswith("✅ Resolved")


def test_fit_lines_keeps_whole_lines_and_counts_the_rest() -> None:
    assert fit_lines(["aaaa", "bbbb", "cccc"], 100) == "aaaa\nbbbb\ncccc"
    out = fit_lines([f"line {i}" for i in range(100)], 60)
    assert len(out) <= 60 and out.endswith("more lines")
    kept = out.count("line ")
    assert out.endswith(f"\n… {100 - kept} more lines")


def test_rank_lists_are_compact() -> None:
    assert rank_ranges([5, 0, 1, 2, 3, 9, 10]) == "0-3,5,9-10"


def test_the_post_names_the_gpu_for_a_hardware_ticket_and_the_steps_lost() -> None:
    """The root cause's GPU (the driver's UUID and board serial, correlator/gpu_ids.py) and the steps the failure
    lost (correlator/impact.py) are what the on-call engineer copies into the RMA and the restart note."""
    from datetime import UTC, datetime

    from schemas.diagnosis import GpuIdentity
    from schemas.impact import Impact

    incident = make_incident()
    rc = incident.diagnosis.root_cause
    assert rc is not None
    at = datetime(2026, 3, 2, 9, 40, tzinfo=UTC)
    impact = Impact(world_size=64, failed_at=at, last_checkpoint_at=at, lost_work_gpu_hours=2.0,
                    lost_work_from="checkpoint", last_step=1900, checkpoint_step=1007, steps_lost=893,
                    gpu_hours_lost=2.0, level="minor")
    gpu = GpuIdentity(pci_bus_id="0000:5d:00", uuid="GPU-f1906b9b-557a-e961-045c-9fe4be3ce012", serial="1653923026510")
    incident = incident.model_copy(update={"diagnosis": incident.diagnosis.model_copy(
        update={"impact": impact, "root_cause": rc.model_copy(update={"gpu": gpu})})})
    blocks = incident_blocks(incident, URL)
    check_blocks(blocks)
    body = texts(blocks)
    assert "*GPU*\\n0000:5d:00 (GPU-f1906b9b-557a-e961-045c-9fe4be3ce012, serial 1653923026510)" in body
    assert "step 1,007 → 1,900: 893 steps" in body
