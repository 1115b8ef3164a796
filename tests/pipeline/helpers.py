"""Shared by the pipeline tests: shards from a directory of logs, a manual clock, a recording scheduler."""

from __future__ import annotations

from pathlib import Path

from correlator.speakers import who_from_path
from pipeline.testing import RecordingScheduler as RecordingScheduler  # the package's in-memory Scheduler
from schemas.wire import JobEvent, LogShard

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "oom-killed-rank37"


def shards_of(job_id: str, root: Path, chunk: int = 64 * 1024) -> list[LogShard]:
    """Every file under root as LogShards cut at newlines, the way a shipper sends them."""
    out = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        name = str(path.relative_to(root))
        who = who_from_path(name)
        stream = "dmesg" if "dmesg" in path.name else "stdout"
        data = path.read_bytes()
        pieces = []
        while data:
            cut = data.rfind(b"\n", 0, chunk) + 1 if len(data) > chunk else len(data)
            pieces.append(data[: cut or chunk])
            data = data[cut or chunk:]
        for seq, piece in enumerate(pieces or [b""]):
            out.append(LogShard(job_id=job_id, rank=who.rank, host=who.host, stream=stream, seq=seq,
                                eof=seq == len(pieces) - 1 or not pieces, data=piece.decode(), source=name))
    return out


def failed_job(job_id: str, world_size: int | None = 64, **extra: object) -> JobEvent:
    return JobEvent.model_validate({"job_id": job_id, "state": "failed", "world_size": world_size,
                                    "cluster": "c1", "team": "llm", **extra})


