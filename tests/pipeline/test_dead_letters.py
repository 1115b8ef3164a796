"""No task is "dropped": one that fails for good leaves a dead letter in the store, with its reason and payload,
that `firstfault dlq list | show | replay` reads (issue 27's OverflowError from SQLite on a huge rank)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from config.settings import load_settings
from firstfault.cli import main
from firstfault.serve import Embedded, build_embedded
from schemas.wire import LogShard
from store.dead_letters import listed, record
from tests.api.server import serving
from tests.integration.celery_worker import wait_for

TOKEN = "s3cret-test-token"


@pytest.fixture
def env(sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    for name in ("FIRSTFAULT_CONFIG", "FIRSTFAULT_HTTP_HOST", "FIRSTFAULT_HTTP_PORT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("FIRSTFAULT_DATABASE_URL", sqlite_url)
    monkeypatch.setenv("FIRSTFAULT_API_TOKEN", TOKEN)
    return sqlite_url


@pytest.fixture
def service(env: str) -> Iterator[tuple[Embedded, str]]:
    settings = load_settings(environ={"FIRSTFAULT_DATABASE_URL": env, "FIRSTFAULT_API_TOKEN": TOKEN,
                                      "FIRSTFAULT_GROUP_WAIT_S": "60"}, path="/dev/null")
    embedded = build_embedded(settings)
    embedded.runner.start()
    with serving(embedded.app) as url:
        yield embedded, url
    embedded.runner.stop()
    embedded.store.close()


def test_a_task_that_fails_for_good_leaves_a_dead_letter_the_cli_lists(
        service: tuple[Embedded, str], capsys: pytest.CaptureFixture[str]) -> None:
    """A shard that skipped validation (queued by an older version, say) with rank 10**30: SQLite cannot hold
    it. The task fails; before, the log said `dropped a task` and the shard was gone."""
    embedded, url = service
    huge = LogShard.model_construct(job_id="j27", rank=10**30, host=None, stream="stdout", seq=0, eof=True,
                                    compression="none", data="hello\n", source=None)
    embedded.runner.submit_shard(huge, {})
    letters = wait_for(lambda: listed(embedded.store), 10, "the dead letter")
    assert embedded.runner.failures and "OverflowError" in embedded.runner.failures[0]

    assert main(["dlq", "list"]) == 0
    out = capsys.readouterr().out
    assert f"{letters[0].id}  " in out and "shard" in out and "j27" in out and "OverflowError" in out
    assert main(["dlq", "list", "--format", "json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert (row["kind"], row["job_id"], row["where"]) == ("shard", "j27", "match_shard")
    assert main(["dlq", "show", str(row["id"])]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["payload"]["rank"] == 10**30 and shown["payload"]["data"] == "hello\n"
    assert "SQLite INTEGER" in shown["reason"]

    # replaying it as it is: the service now refuses it at the edge, with why
    assert main(["dlq", "replay", str(row["id"]), "--url", url]) == 2
    err = capsys.readouterr().err
    assert "still does not validate" in err and "1048575" in err


def test_replay_sends_a_fixed_cause_s_shard_again(service: tuple[Embedded, str],
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    embedded, url = service
    shard = LogShard(job_id="j28", rank=3, seq=0, eof=True, data="hello\n")
    letter = record(embedded.store, "shard", "match_shard", "TransportError: database: locked",
                    shard.model_dump(mode="json"), embedded.pipeline.clock())
    assert main(["dlq", "replay", str(letter), "--url", url]) == 0
    assert "replayed dead letter" in capsys.readouterr().out
    stored = wait_for(lambda: embedded.store.job("j28").shards, 10, "the replayed shard")
    assert [s.key.rank for s in stored] == [3]
    assert listed(embedded.store)[0].replayed_at is not None
    assert main(["dlq", "show", "999"]) == 2


def test_a_celery_task_s_permanent_failure_is_a_dead_letter(env: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.service import Pipeline
    from workers import tasks

    tasks.pipeline.cache_clear()
    try:
        # a shard queued before the bounds existed: refused for good, kept
        tasks.match_shard.apply(args=({"job_id": "j29", "rank": 10**30, "seq": 0, "data": "x"},))

        # a bug in correlation: the task fails, and what it was given is kept
        def broken(self: Pipeline, job_id: str, headers: object = None) -> None:
            raise RuntimeError("a bug")

        monkeypatch.setattr(Pipeline, "correlate", broken)
        tasks.correlate_job.apply(args=("j30",))
        store = tasks.pipeline().store
        letters = {(x.kind, x.job_id, x.where): x for x in listed(store)}
        assert set(letters) == {("shard", "j29", "firstfault.match_shard"),
                                ("correlate", "j30", "firstfault.correlate_job")}
        assert "rank" in letters["shard", "j29", "firstfault.match_shard"].reason
        assert letters["correlate", "j30", "firstfault.correlate_job"].reason == "RuntimeError: a bug"
    finally:
        if tasks.pipeline.cache_info().currsize:
            tasks.pipeline().store.close()
        tasks.pipeline.cache_clear()


def test_the_consumer_s_rejects_are_listed_too(env: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A message the Kafka consumer refuses goes to firstfault.dlq and, in serve, into the store as well."""
    import base64
    import threading

    from ingest.consumer import IngestLoop
    from ingest.dlq import DeadLetterWriter
    from ingest.kafka import Record
    from ingest.testing import RecordingDispatcher
    from ingest.topics import DEFAULT_TOPICS
    from store.dead_letters import keep_message
    from store.incidents import Store
    from tests.fakes.ingest import DlqProducer, ListSource

    raw = b'{"job_id": "j31", "rank": ' + str(10**30).encode() + b', "seq": 0, "data": "x"}'
    store = Store.open(env)
    try:
        producer = DlqProducer()
        loop = IngestLoop(ListSource([Record(DEFAULT_TOPICS.shards, 0, 7, b"j31", raw, {})]), RecordingDispatcher(),
                          DeadLetterWriter(producer, also=lambda letter: keep_message(store, letter)))
        assert loop.step(threading.Event()).dead_lettered == 1
    finally:
        store.close()
    assert len(producer.sent) == 1  # on the topic, and:
    assert main(["dlq", "list", "--job", "j31", "--format", "json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert (row["kind"], row["where"]) == ("message", DEFAULT_TOPICS.shards) and "rank" in row["reason"]
    assert main(["dlq", "show", str(row["id"])]) == 0
    shown = json.loads(capsys.readouterr().out)["payload"]
    assert base64.b64decode(shown["value_base64"]) == raw and shown["offset"] == 7
    assert main(["dlq", "replay", str(row["id"])]) == 2
    assert "fix it at the producer" in capsys.readouterr().err
