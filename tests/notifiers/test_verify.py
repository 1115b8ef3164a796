"""Verifying a fix, end to end: 64 ranks of logs through the real pipeline and outbox (a host.oom_killer incident,
whose catalog entry expects `count: 0`), the app served by uvicorn, the CLI running real commands, and the fake
Slack and PagerDuty driven by slack-sdk and httpx; on SQLite and PostgreSQL."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from firstfault.cli import main
from notifiers.outbox import deliver_due
from tests.notifiers import test_resolve
from tests.notifiers.test_resolve import AUTH, JOB, World

world = test_resolve.world  # the same fixture: the pipeline, the served app, Slack and PagerDuty stand-ins

SLACK_TOKEN_IN_OUTPUT = "xoxb-123456789012-abcdefghijkl"


def _verify(w: World, incident_id: str, **body: object) -> dict[str, object]:
    answer = w.http.post(f"/v1/incidents/{incident_id}/verification", json=body, headers=AUTH)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def test_a_reported_pass_verifies_the_incident_edits_the_slack_post_and_resolves_the_page(world: World) -> None:
    incident = world.fail(JOB)
    fields = [f["text"] for b in world.post().blocks for f in b.get("fields", [])]
    assert any(f.startswith("*Cost*\n≈10.7 GPU-hours lost (64 GPUs") for f in fields)  # what the failure cost
    world.clock.advance(3600)
    out = _verify(world, incident.id, by="alice", command="dmesg -T | grep -c 'Out of memory: Killed process'",
                  exit_code=1, output=f"export SLACK_TOKEN={SLACK_TOKEN_IN_OUTPUT}\n0\n")
    v = out["verification"]
    assert isinstance(v, dict)
    # grep -c exits 1 when it counts nothing: the entry's `expect: {count: 0}` judges the output, not the status
    assert v["status"] == "passed" and v["by"] == "alice" and v["criterion"] == "count 0" and not v["fallback"]
    assert v["at"].startswith(world.clock.now.isoformat()[:19])  # the injected clock, not the wall
    assert SLACK_TOKEN_IN_OUTPUT not in v["output_excerpt"] and "[REDACTED]" in v["output_excerpt"]
    assert out["incident"]["state"] == "resolved" and out["incident"]["revision"] == 2  # type: ignore[index]

    world.deliver()
    root = world.post()
    assert len(root.edits) == 1 and root.blocks[0]["text"]["text"].startswith("✅ Verified: ")
    assert "Verified* by alice" in str(root.blocks) and SLACK_TOKEN_IN_OUTPUT not in str(root.blocks)
    [reply] = world.replies()
    assert "Verified: alice reported" in reply.text and "count 0" in reply.text
    assert world.alert().status == "resolved"

    detail = world.http.get(f"/v1/incidents/{incident.id}").json()
    assert detail["incident"]["verification"]["status"] == "passed"
    assert "Verified: alice" in detail["revisions"][-1]["changes"][0]
    page = world.http.get(f"/incidents/{incident.id}").text
    assert "<strong>Verified</strong> by alice" in page and "pass means count 0" in page


def test_a_failed_run_reopens_a_resolved_incident_and_says_so(world: World, db_url: str,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    incident = world.fail(JOB)
    assert world.resolve(incident.id, "drained node004").status_code == 200
    world.deliver()
    code = main(["verify", incident.id, "--db", db_url, "--by", "bob", "--",
                 sys.executable, "-c", "print('Out of memory: Killed process'); print(3)"])
    printed = capsys.readouterr().out
    assert code == 1 and f"FAILED: {incident.id} is reopened" in printed and "count 3, expected 0" in printed
    stored = world.store.incident(incident.id)
    assert stored is not None and stored.state == "open" and stored.verification is not None
    assert stored.verification.by == "bob" and stored.verification.exit_code == 0
    assert "print(3)" in stored.verification.command and stored.verification.output_excerpt.endswith("3\n")

    deliver_due(world.store, world.notifiers, datetime.now(UTC))  # the CLI queued it on the wall clock
    root = world.post()
    assert root.blocks[0]["text"]["text"].startswith("🔴 Verification failed, reopened: ")
    assert "reopened" in world.replies()[-1].text
    assert world.alert().status == "triggered"  # the page comes back: the fix did not hold


def test_an_entry_without_expect_falls_back_to_exit_status_zero_and_says_so(world: World, db_url: str,
                                                                              capsys: pytest.CaptureFixture[str],
                                                                              tmp_path: Path) -> None:
    incident = world.fail(JOB, with_dmesg=False)  # pytorch.c10d.desync_not_joined: its entry has no `expect`
    output = tmp_path / "out.txt"
    output.write_text("all ranks joined\n")
    code = main(["verify", incident.id, "--db", db_url, "--by", "ci", "--exit-code", "0", "--output-file",
                 str(output), "--command", "torchrun --nnodes 8 train.py --steps 10"])
    printed = capsys.readouterr().out
    assert code == 0 and "PASSED" in printed and "judged by exit status 0" in printed
    stored = world.store.incident(incident.id)
    assert stored is not None and stored.verification is not None and stored.verification.fallback
    assert stored.verification.reported and stored.state == "resolved"


def test_a_command_past_its_timeout_is_killed_and_fails(world: World, db_url: str,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    incident = world.fail(JOB)
    code = main(["verify", incident.id, "--db", db_url, "--by", "carol", "--timeout", "0.5", "--",
                 sys.executable, "-c", "import time; print(0, flush=True); time.sleep(60)"])
    assert code == 1 and "timed out after 0.5 s" in capsys.readouterr().out
    stored = world.store.incident(incident.id)
    assert stored is not None and stored.verification is not None and stored.verification.exit_code == 124


def test_no_shell_unless_asked(world: World, db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    incident = world.fail(JOB)
    assert main(["verify", incident.id, "--db", db_url, "--", "echo 0 | cat"]) == 2
    assert "add --shell" in capsys.readouterr().err
    assert main(["verify", incident.id, "--db", db_url, "--by", "dan", "--shell", "--", "echo 0 | cat"]) == 0
    assert "PASSED" in capsys.readouterr().out


def test_the_api_refuses_what_it_cannot_judge(world: World) -> None:
    incident = world.fail(JOB)
    url = f"/v1/incidents/{incident.id}/verification"
    assert world.http.post(url, json={"by": "x", "exit_code": 0}).status_code == 401
    assert world.http.post(url, json={"by": "x"}, headers=AUTH).status_code == 400
    assert world.http.post("/v1/incidents/inc-nothere/verification", json={"by": "x", "result": "pass"},
                           headers=AUTH).status_code == 404
    stated = _verify(world, incident.id, by="erin", result="fail")
    assert stated["verification"]["stated"] is True and stated["incident"]["state"] == "open"  # type: ignore[index]
