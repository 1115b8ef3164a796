"""Producing logs: cutting at newlines, the 1 MiB envelope limit, seq/eof per stream, the `ship` and `schema`
commands, and the HTTP transport against a real local server."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import ingest.ship as ship
from firstfault.cli import main
from ingest.chunking import StreamKey, envelopes, line_pieces, numbered
from ingest.ship import HttpTransport, Overrides, plan, stream_shards
from ingest.validate import validate_message
from ingest.wire_schema import MODELS, committed_path, schema_text
from schemas.errors import TransportError
from schemas.wire import MAX_SHARD_BYTES, JobEvent, LogShard
from sources.shard_data import decode_shard_data

KEY = StreamKey(stream="stdout", rank=3, host="node017")


def _notes() -> tuple[list[str], object]:
    seen: list[str] = []
    return seen, seen.append


def test_pieces_end_at_newlines_and_lose_nothing() -> None:
    lines = [b"line %d %s\n" % (i, b"x" * (i % 50)) for i in range(2000)]
    blocks = [b"".join(lines)[i:i + 777] for i in range(0, len(b"".join(lines)), 777)]  # cut anywhere
    notes, note = _notes()
    pieces = list(line_pieces(blocks, 4096, note))  # type: ignore[arg-type]
    assert b"".join(pieces) == b"".join(lines)
    assert all(p.endswith(b"\n") and len(p) <= 4096 for p in pieces)
    assert notes == []


def test_a_line_longer_than_a_piece_is_cut_and_noted() -> None:
    data = b"short\n" + b"L" * 10_000 + b"\nend\n"
    notes, note = _notes()
    pieces = list(line_pieces([data], 4096, note, "rank3.log"))  # type: ignore[arg-type]
    assert b"".join(pieces) == data
    assert max(map(len, pieces)) <= 4096
    assert notes and "rank3.log: a line longer than 4,096 bytes was cut" in notes[0]


@pytest.mark.parametrize("compression", ["zstd", "gzip", "none"])
@pytest.mark.parametrize("content", ["random", "escapes"])
def test_every_message_fits_1_mib_including_its_envelope(compression: str, content: str) -> None:
    rng = random.Random(1)
    if content == "random":  # incompressible: base64 makes it 4/3 bigger
        data = b"".join(rng.randbytes(200) + b"\n" for _ in range(20_000))
    else:  # valid UTF-8 that JSON escapes six-fold (\u0001), random enough to compress badly
        controls = bytes(b for b in range(1, 32) if b != 10)
        data = b"".join(bytes(rng.choices(controls, k=300)) + b"\n" for _ in range(14_000))
    notes, note = _notes()
    shards = list(envelopes("job-1", KEY, "rank3.log", data, compression, note))  # type: ignore[arg-type]
    assert len(shards) > 1
    for shard in shards:
        wire = shard.model_dump_json().encode()
        assert len(wire) <= MAX_SHARD_BYTES
        validate_message("shard", wire, b"job-1")  # the consumer accepts what the producer makes
    assert b"".join(decode_shard_data(s) for s in shards) == data
    assert notes == []  # halving found newlines every time


def test_none_compression_sends_text_but_never_mangles_binary() -> None:
    text, binary = list(envelopes("j", KEY, None, b"ok\n", "none", print)), list(
        envelopes("j", KEY, None, b"\xff\xfe\n", "none", print))
    assert text[0].compression == "none" and text[0].data == "ok\n"
    assert binary[0].compression == "zstd" and decode_shard_data(binary[0]) == b"\xff\xfe\n"


def test_seq_runs_from_zero_with_eof_on_the_last_only() -> None:
    shards = [LogShard(job_id="j", seq=0, data=str(i)) for i in range(4)]
    out = list(numbered(shards, "j", KEY, "f"))
    assert [(s.seq, s.eof, s.data) for s in out] == [(0, False, "0"), (1, False, "1"), (2, False, "2"), (3, True, "3")]


def test_an_empty_log_still_sends_one_eof_shard() -> None:
    [only] = numbered([], "j", KEY, "rank3.log")
    assert (only.seq, only.eof, only.data, only.rank, only.host, only.source) == (0, True, "", 3, "node017",
                                                                                   "rank3.log")


@pytest.fixture
def job_dir(tmp_path: Path) -> Path:
    files = {"node000/rank0.log": b"a\n", "node000/rank1.log": b"b\n", "node000/dmesg.log": b"oom\n",
             "node001/stderr.log": b"c\n", "node001/stderr.1.log": b"d\n", "node001/empty.log": b""}
    for name, data in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    return tmp_path


def test_a_directory_is_one_stream_per_file_with_rank_and_host_from_the_path(job_dir: Path) -> None:
    groups = plan([str(job_dir)], Overrides())
    keys = {(k.stream, k.rank, k.host): [s.name for s in v] for k, v in groups.items()}
    assert keys == {("other", 0, "node000"): ["node000/rank0.log"],
                    ("other", 1, "node000"): ["node000/rank1.log"],
                    ("dmesg", None, "node000"): ["node000/dmesg.log"],
                    ("other", None, "node001"): ["node001/empty.log"],
                    ("stderr", None, "node001"): ["node001/stderr.1.log", "node001/stderr.log"]}


def test_files_sharing_a_stream_key_are_numbered_on_so_seq_never_collides(job_dir: Path) -> None:
    groups = plan([str(job_dir)], Overrides())
    [(key, sources)] = [(k, v) for k, v in groups.items() if k.stream == "stderr"]
    shards = list(stream_shards("j", key, sources, "zstd", print))
    assert [(s.seq, s.eof, s.source, decode_shard_data(s)) for s in shards] == [
        (0, False, "node001/stderr.1.log", b"d\n"), (1, True, "node001/stderr.log", b"c\n")]


def test_the_command_line_wins_over_the_path(job_dir: Path) -> None:
    groups = plan([str(job_dir / "node000" / "rank0.log")], Overrides(rank=7, host="gpu-9", stream="stderr"))
    assert list(groups) == [StreamKey(stream="stderr", rank=7, host="gpu-9")]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["ship", "--job", "j", "--bootstrap", "h:1"], "give FILE|DIR|- to ship logs, or --state"),
        (["ship", "--job", "j", "--state", "failed", "--bootstrap", "h:1", "x.log"], "separate call"),
        (["ship", "--job", "j", "--state", "failed"], "no destination"),
        (["ship", "--job", "j", "--state", "failed", "--url", "h:1", "--bootstrap", "h:1"], "not both"),
        (["ship", "--job", "j", "--state", "failed", "--url", "ftp://h"], "must start with http"),
        (["ship", "--job", "j", "--state", "failed", "--exit-code", "3", "--url", "http://h"], "NAME=VALUE"),
        (["ship", "--job", "j", "--state", "failed", "--exit-code", "3=nine", "--url", "http://h"], "an integer"),
        (["ship", "--job", "j", "--state", "failed", "--world-size", "0", "--url", "http://h"],
         "world_size: Input should be greater than or equal to 1"),
        (["ship", "--job", "j", "--state", "exploded", "--url", "http://h"], "invalid choice"),
        (["ship", "--job", "", "--state", "failed", "--url", "http://h"], "1 to 256 characters"),
        (["ship", "--job", "j", "--url", "http://h", "/no/such/dir"], "no such file or directory"),
        (["ship", "--job", "j", "--url", "http://h", "--host", "a", "--host", "b", "x"], "one --host"),
        (["schema", "job"], "invalid choice"),
    ],
)
def test_bad_usage_exits_2_with_one_line(argv: list[str], message: str, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FIRSTFAULT_KAFKA_BOOTSTRAP", raising=False)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and err.startswith("firstfault: error:")


@pytest.mark.parametrize("name", list(MODELS))
def test_the_committed_json_schemas_are_current(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", name]) == 0
    printed = capsys.readouterr().out
    assert printed == schema_text(name)
    assert committed_path(name).read_text() == printed, "stale: run `python -m ingest.wire_schema`"
    schema = json.loads(printed)
    assert schema["additionalProperties"] is False and "job_id" in schema["required"]


class _Ingest(BaseHTTPRequestHandler):
    """A stand-in for firstfault's HTTP ingest: records each POST and answers from a script of statuses."""

    received: list[tuple[str, str | None, bytes]]
    statuses: list[int]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append((self.path, self.headers.get("Authorization"), body))
        status = self.statuses.pop(0) if self.statuses else 202
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"detail": "bad token"}' if status == 401 else b"{}")

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def ingest_server() -> Iterator[type[_Ingest]]:
    handler = type("Handler", (_Ingest,), {"received": [], "statuses": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    handler.url = f"http://127.0.0.1:{server.server_address[1]}"  # type: ignore[attr-defined]
    try:
        yield handler
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.mark.integration
def test_http_ship_posts_every_shard_with_the_token(ingest_server: type[_Ingest], job_dir: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FIRSTFAULT_API_TOKEN", "s3cret")
    assert main(["ship", "--job", "j-http", "--url", ingest_server.url, str(job_dir)]) == 0  # type: ignore[attr-defined]
    assert {(path, auth) for path, auth, _ in ingest_server.received} == {("/v1/shards", "Bearer s3cret")}
    shards = [LogShard.model_validate_json(body) for _, _, body in ingest_server.received]
    assert {s.source: decode_shard_data(s) for s in shards if s.data} == {
        "node000/rank0.log": b"a\n", "node000/rank1.log": b"b\n", "node000/dmesg.log": b"oom\n",
        "node001/stderr.log": b"c\n", "node001/stderr.1.log": b"d\n"}
    assert sum(s.eof for s in shards) == 5  # one per (stream, rank, host)


@pytest.mark.integration
def test_http_job_event_survives_a_503_and_carries_every_field(ingest_server: type[_Ingest],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FIRSTFAULT_API_TOKEN", raising=False)
    ingest_server.statuses = [503]
    argv = ["ship", "--job", "j-ev", "--state", "failed", "--world-size", "64", "--cluster", "c1", "--team", "ml",
            "--host", "node000", "--host", "node001", "--exit-code", "37=-9", "--exit-code", "node004=137",
            "--label", "model=llama", "--scheduler", "slurm", "--url", ingest_server.url]  # type: ignore[attr-defined]
    assert main(argv) == 0
    [(path, auth, _), (again, _, body)] = ingest_server.received
    assert path == again == "/v1/jobs" and auth is None
    event = JobEvent.model_validate_json(body)
    assert (event.state, event.world_size, event.cluster, event.team, event.hosts, event.exit_codes, event.labels,
            event.scheduler) == ("failed", 64, "c1", "ml", ["node000", "node001"], {"37": -9, "node004": 137},
                                 {"model": "llama"}, "slurm")
    assert event.ended_at is not None


def test_http_shipping_tries_as_its_retry_policy_says_then_raises(ingest_server: type[_Ingest],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr(ship.time, "sleep", slept.append)
    ingest_server.statuses = [503] * 4
    transport = HttpTransport(ingest_server.url)  # type: ignore[attr-defined]
    with pytest.raises(TransportError, match="HTTP 503"):
        transport.send_job(JobEvent(job_id="j-down", state="failed"))
    transport.close()
    assert len(ingest_server.received) == 4 and slept == [0.5, 1.0, 2.0]  # schemas.retry.SHIP


@pytest.mark.integration
def test_http_refusal_exits_1_with_the_servers_reason(ingest_server: type[_Ingest],
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    ingest_server.statuses = [401]
    argv = ["ship", "--job", "j", "--state", "failed", "--url", ingest_server.url]  # type: ignore[attr-defined]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "HTTP 401" in err and "bad token" in err
    assert len(ingest_server.received) == 1  # a 4xx is not retried


@pytest.mark.integration
def test_a_ship_the_service_stops_taking_says_what_was_not_delivered(
        ingest_server: type[_Ingest], job_dir: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Two shards go through, then the service refuses (a 413): the error names the file it stopped in and the
    files never sent, so they can be shipped again (the service keeps each shard once)."""
    monkeypatch.delenv("FIRSTFAULT_API_TOKEN", raising=False)
    ingest_server.statuses = [202, 202, 413]
    argv = ["ship", "--job", "j-cut", "--url", ingest_server.url, str(job_dir)]  # type: ignore[attr-defined]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "HTTP 413" in err and "delivered 2 shard(s)" in err, err
    sent = {LogShard.model_validate_json(body).source for _, _, body in ingest_server.received[:2]}
    stopped = LogShard.model_validate_json(ingest_server.received[2][2]).source
    assert f"not delivered: {stopped}" in err or f", {stopped}" in err, err
    never = {"node000/rank0.log", "node000/rank1.log", "node000/dmesg.log", "node001/stderr.log",
             "node001/stderr.1.log"} - sent - {stopped}
    assert never and all(name in err for name in never), err


@pytest.mark.integration
def test_stdin_ships_as_one_stdout_stream(ingest_server: type[_Ingest]) -> None:
    log = b"".join(b"[rank3]: step %d\n" % i for i in range(50_000))
    done = subprocess.run([sys.executable, "-m", "firstfault.cli", "ship", "--job", "j-in", "--rank", "3",
                           "--url", ingest_server.url, "-"], input=log, capture_output=True,  # type: ignore[attr-defined]
                          timeout=120, env={k: v for k, v in os.environ.items() if k != "FIRSTFAULT_API_TOKEN"})
    assert done.returncode == 0, done.stderr
    shards = sorted((LogShard.model_validate_json(body) for _, _, body in ingest_server.received), key=lambda s: s.seq)
    assert {(s.stream, s.rank, s.host, s.source) for s in shards} == {("stdout", 3, None, None)}
    assert shards[-1].eof and b"".join(decode_shard_data(s) for s in shards) == log


def _epilog(tmp_path: Path, url: str, **env: str) -> None:
    """Run deploy/slurm/epilog.sh as Slurm would, with `firstfault` and `scontrol` stand-ins on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "firstfault").write_text(f"#!/bin/sh\nexec {sys.executable} -m firstfault.cli \"$@\"\n")
    (bin_dir / "scontrol").write_text("#!/bin/sh\nprintf 'node000\\nnode001\\n'\n")  # show hostnames node[000-001]
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    root = Path(__file__).resolve().parents[2]
    full = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "FIRSTFAULT": str(bin_dir / "firstfault"),
            "FIRSTFAULT_URL": url, "PYTHONPATH": str(root), "SLURM_JOB_ID": "777", **env}
    done = subprocess.run(["bash", str(root / "deploy" / "slurm" / "epilog.sh")], env=full, capture_output=True,
                          timeout=120)
    assert done.returncode == 0 and b"error" not in done.stderr, done.stderr


@pytest.mark.integration
@pytest.mark.parametrize(("status", "state", "code"), [(0, "succeeded", 0), (256, "failed", 1), (9, "failed", -9)])
def test_the_slurm_epilog_sends_the_job_state_from_the_controller(ingest_server: type[_Ingest], tmp_path: Path,
                                                                  status: int, state: str, code: int) -> None:
    _epilog(tmp_path, ingest_server.url, SLURM_SCRIPT_CONTEXT="epilog_slurmctld",  # type: ignore[attr-defined]
            SLURM_JOB_EXIT_CODE=str(status), SLURM_JOB_NODELIST="node[000-001]", SLURM_CLUSTER_NAME="c1")
    [(path, _, body)] = ingest_server.received
    event = JobEvent.model_validate_json(body)
    assert path == "/v1/jobs"
    assert (event.job_id, event.state, event.hosts, event.exit_codes, event.cluster, event.scheduler) == (
        "777", state, ["node000", "node001"], {"node000": code}, "c1", "slurm")


@pytest.mark.integration
def test_the_slurm_epilog_ships_this_nodes_log_directory(ingest_server: type[_Ingest], tmp_path: Path) -> None:
    host = subprocess.run(["hostname", "-s"], capture_output=True, text=True, check=True).stdout.strip()
    logs = tmp_path / "logs" / "777" / host
    logs.mkdir(parents=True)
    (logs / "rank5.log").write_bytes(b"[rank5]: RuntimeError: boom\n")
    _epilog(tmp_path, ingest_server.url, FIRSTFAULT_LOG_ROOT=str(tmp_path / "logs"))
    [(path, _, body)] = ingest_server.received
    shard = LogShard.model_validate_json(body)
    assert (path, shard.job_id, shard.rank, shard.host, shard.eof) == ("/v1/shards", "777", 5, host, True)
    assert decode_shard_data(shard) == b"[rank5]: RuntimeError: boom\n"


class _FailingTransport:
    """Takes `accept` shards, then refuses every send as a stopped broker would."""

    def __init__(self, accept: int) -> None:
        self.accept, self.sent, self.closed, self.abandoned = accept, 0, False, False

    def send_job(self, event: JobEvent) -> None:
        raise AssertionError("not sent here")

    def send_shard(self, shard: LogShard) -> None:
        if self.sent >= self.accept:
            from schemas.errors import TransportError

            raise TransportError("kafka: a message was not acknowledged: KafkaTimeoutError")
        self.sent += 1

    def close(self) -> None:
        self.closed = True

    def abandon(self) -> None:
        self.abandoned = True


def test_a_ship_that_fails_releases_its_transport_and_says_what_was_not_delivered(job_dir: Path) -> None:
    # a Kafka producer left open keeps a thread retrying its queue for as long as anything holds the error (a
    # caller that logs or keeps it): that thread once printed '--- Logging error ---' into another test's stderr
    from ingest.ship import ship_logs
    from schemas.errors import TransportError

    transport = _FailingTransport(accept=2)
    with pytest.raises(TransportError, match="delivered 2 shard"):
        ship_logs(transport, "j", [str(job_dir)], Overrides(), "none", lambda _m: None)
    assert transport.abandoned and not transport.closed
