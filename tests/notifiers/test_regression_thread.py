"""A regression is told in the earlier incident's Slack thread (issue 26), end to end: two jobs of 64 ranks
whose node004 is OOM-killed, the first resolved, through the real pipeline and outbox to the fake Slack driven by
slack-sdk; on SQLite and PostgreSQL. The second job posts its own root, marked as a regression and one severity
up; the first's thread gets one reply naming it (not broadcast to the channel again) and its root is edited to
say it failed again; a second correlation of the regression tells nothing twice."""

from __future__ import annotations

from tests.fakes.slack_api import Message
from tests.notifiers.test_resolve import JOB, World, world
from tests.pipeline.helpers import EXAMPLE, failed_job, shards_of

__all__ = ["world"]  # the fixture: the pipeline, the served app, the Slack and PagerDuty stand-ins

AGAIN = "j-88207"


def _fields(message: Message) -> list[str]:
    return [f["text"] for b in message.blocks for f in b.get("fields", [])]


def test_a_regression_is_told_in_the_earlier_thread_and_posted_on_its_own(world: World) -> None:
    first = world.fail(JOB)
    assert world.resolve(first.id, "drained node004, raised the cgroup limit").status_code == 200
    world.deliver()
    [resolution] = world.replies()
    assert resolution.broadcast  # a resolution is shown in the channel too

    world.clock.advance(3600)
    again = world.fail(AGAIN)  # the same OOM kill on node004: the fix did not hold
    assert again.regression_of == first.id and again.severity == "critical"

    earlier_root, new_root = world.slack.posts("#ml-oncall")
    assert any(f.startswith("*Regression*") and first.id in f for f in _fields(new_root))
    told = world.slack.replies("#ml-oncall", earlier_root.ts)[1:]
    assert len(told) == 1 and not told[0].broadcast  # the regression has its own post in the channel
    assert f"Failed again: {again.id}" in told[0].text and f"job {AGAIN}" in told[0].text
    assert "host.oom_killer" in told[0].text and "node004" in told[0].text
    assert earlier_root.blocks[0]["text"]["text"].startswith("🔁 Failed again after its fix: ")
    assert any(f.startswith("*Failed again*") and again.id in f for f in _fields(earlier_root))
    stored = world.store.incident(first.id)
    assert stored is not None and (stored.state, stored.regressed_by) == ("resolved", again.id)
    page = world.http.get(f"/incidents/{first.id}").text
    assert f'Failed again after its fix: <a href="/incidents/{again.id}">' in page
    assert f'Regression of <a href="/incidents/{first.id}">' in world.http.get(f"/incidents/{again.id}").text

    # the regression's job gets a late shard: its incident is correlated again, the earlier thread hears nothing
    world.pipe.accept_job(failed_job(AGAIN, cluster="c1"))
    late = next(s for s in shards_of(AGAIN, EXAMPLE) if s.stream == "dmesg")
    world.pipe.accept_shard(late.model_copy(update={"seq": late.seq + 1000, "source": "dmesg-late"}))
    world.clock.advance(31)
    world.pipe.correlate(AGAIN)
    world.deliver()
    assert len(world.slack.replies("#ml-oncall", earlier_root.ts)) == 2
    assert len(world.slack.posts("#ml-oncall")) == 2


def test_an_open_earlier_incident_hears_nothing(world: World) -> None:
    first = world.fail(JOB)
    again = world.fail(AGAIN)  # not resolved: the same fault again, not a fix that failed
    assert again.regression_of is None
    earlier_root, _ = world.slack.posts("#ml-oncall")
    assert world.slack.replies("#ml-oncall", earlier_root.ts) == []
    stored = world.store.incident(first.id)
    assert stored is not None and stored.regressed_by is None
