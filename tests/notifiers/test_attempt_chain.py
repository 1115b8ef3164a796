"""A job's next attempt succeeding closes the chain (issue 26), end to end: attempt 0 of a 64-rank job fails
(node004 OOM-killed), its incident is posted and paged; attempt 1's `succeeded` event arrives through the real
pipeline and outbox, to the fake Slack and PagerDuty driven by slack-sdk and httpx; on SQLite and PostgreSQL."""

from __future__ import annotations

from tests.notifiers.test_resolve import JOB, World, world
from tests.pipeline.helpers import failed_job

__all__ = ["world"]  # the fixture: the pipeline, the served app, the Slack and PagerDuty stand-ins


def _succeeded(w: World, attempt: int) -> None:
    w.pipe.accept_job(failed_job(JOB, state="succeeded", attempt=attempt))
    w.deliver()


def test_a_succeeding_attempt_resolves_the_open_incident_and_its_page(world: World) -> None:
    incident = world.fail(JOB)
    assert incident.attempt == 0 and world.alert().status == "triggered"
    world.clock.advance(1800)
    _succeeded(world, 1)
    stored = world.store.incident(incident.id)
    assert stored is not None and stored.state == "resolved" and stored.revision == incident.revision
    [reply] = world.replies()
    assert "Attempt 1 of job j-88123 succeeded" in reply.text and "own recovery" in reply.text
    assert world.post().blocks[0]["text"]["text"].startswith("✅")
    assert world.alert().status == "resolved"

    _succeeded(world, 1)  # the same event again (a redelivery): nothing more is said
    assert len(world.replies()) == 1


def test_after_a_fix_the_success_says_the_fix_held(world: World) -> None:
    incident = world.fail(JOB)
    assert world.resolve(incident.id, "raised the DataLoader's memory limit").status_code == 200
    world.deliver()
    _succeeded(world, 1)
    stored = world.store.incident(incident.id)
    assert stored is not None and stored.revision == incident.revision + 1
    resolution, held = world.replies()
    assert "raised the DataLoader" in resolution.text and "succeeded: the fix held" in held.text


def test_a_success_of_the_failed_attempt_itself_changes_nothing(world: World) -> None:
    incident = world.fail(JOB)
    _succeeded(world, 0)  # a late or wrong event for the attempt that failed: its diagnosis stands
    stored = world.store.incident(incident.id)
    assert stored is not None and stored.state == "open" and world.replies() == []
