"""Writes the seed corpora under tests/fuzz/corpus/<target>/: a few valid inputs of each target, in the formats
the fixtures and the contract show (docs/contracts.md), for the mutations to start from. Run once; the files are
committed (`python -m tests.fuzz.make_corpus` rewrites them the same way)."""

from __future__ import annotations

import base64
import gzip
from collections.abc import Callable
from functools import partial
from pathlib import Path

import yaml
import zstandard

from schemas.diagnosis import Alternative, Diagnosis, Suspect
from schemas.wire import JobEvent, LogShard
from tests.catalog.test_loader_fuzz import ENTRY
from tests.notifiers.conftest import make_incident, oom_diagnosis

CORPUS = Path(__file__).parent / "corpus"
gzip_compress = partial(gzip.compress, mtime=0)  # the same bytes on every run
LOG = (b"node004:31844:31844 [5] NCCL INFO Bootstrap : Using eth0:10.0.0.4<0>\n"
       b"[rank37]: RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 5; 79.10 GiB total)\n"
       b"[Sun Nov 29 10:14:45 2026] Out of memory: Killed process 31844 (python) total-vm:812345kB\n"
       b"Traceback (most recent call last):\n  File \"train.py\", line 88, in <module>\n"
       b"[rank3]:[E1129 10:15:02.118 ProcessGroupNCCL.cpp:616] Watchdog caught collective operation timeout\n")


def _shard(compression: str, data: bytes, **fields: object) -> bytes:
    packers: dict[str, Callable[[bytes], bytes]] = {"gzip": gzip_compress,
                                                    "zstd": zstandard.ZstdCompressor().compress}
    packed = packers.get(compression)
    text = base64.b64encode(packed(data)).decode() if packed else data.decode()
    shard = LogShard.model_validate({"job_id": "j", "seq": 0, "compression": compression, "data": text, **fields})
    return shard.model_dump_json(exclude_defaults=True).encode()


def wire() -> dict[str, bytes]:
    job = JobEvent(job_id="j", cluster="h100-east", scheduler="slurm", state="failed", world_size=64,
                   hosts=["node004", "node005"], rank_hosts={37: "node004"}, exit_codes={"37": 137, "node004": 1},
                   team="pretrain", labels={"project": "llama"}, attempt=1)
    return {"job.json": job.model_dump_json(exclude_defaults=True).encode(),
            "job_min.json": b'{"job_id":"j","state":"failed"}',
            "shard_none.json": _shard("none", LOG, rank=37, host="node004", eof=True, source="rank37.log"),
            "shard_gzip.json": _shard("gzip", LOG, stream="dmesg", host="node004"),
            "shard_zstd.json": _shard("zstd", LOG, rank=3, seq=2)}


def shard_data() -> dict[str, bytes]:
    # first byte: 0 gzip, 1 zstd, 2 none; | 0x80 for the 4 KiB bound
    return {"gzip": b"\x00" + gzip_compress(LOG), "zstd": b"\x01" + zstandard.ZstdCompressor().compress(LOG),
            "none": b"\x02" + LOG, "gzip_two_members": b"\x00" + gzip_compress(LOG) + gzip_compress(b"x\n"),
            "zstd_bomb_small": b"\x81" + zstandard.ZstdCompressor().compress(b"\n" * 20_000)}


def logs() -> dict[str, bytes]:
    # first byte: layout (plain, gzip, zstd, raw .gz, raw .zst) and chunk size
    return {"plain": b"\x00" + LOG, "plain_chunks_7": b"\x0f" + LOG, "gzip": b"\x01" + LOG, "zstd": b"\x02" + LOG,
            "raw_gz": b"\x03" + gzip_compress(LOG), "raw_zst": b"\x04" + zstandard.ZstdCompressor().compress(LOG)}


def catalog_file() -> dict[str, bytes]:
    two = {**ENTRY, "id": "site.other", "related": ["site.custom_failure"],
           "fingerprints": [{"regex": r"OTHER (?P<rank>\d+)", "prefilter": "OTHER"}]}
    return {"one.yaml": yaml.safe_dump({"version": 1, "signatures": [ENTRY]}, sort_keys=False).encode(),
            "two.yaml": yaml.safe_dump({"version": 1, "signatures": [ENTRY, two]}, sort_keys=False).encode(),
            "empty.yaml": b"version: 1\nsignatures: []\n"}


def render() -> dict[str, bytes]:
    # first byte: how much the incident is scaled (0: as it is), 0x10: the terminal report too
    suspects = Diagnosis(verdict="suspects", root_cause=None, suspects=[
        Suspect(rank=3, host="node001", signature="x.y", confidence=0.4, reasons=["first to stop"])],
        alternatives=[Alternative(signature="[bold]x.y", rank=1, host="[/bold]node7", confidence=0.2)])
    nothing = Diagnosis(verdict="no_failure_found", root_cause=None)
    return {"oom": b"\x00" + make_incident().model_dump_json().encode(),
            "oom_terminal": b"\x10" + make_incident().model_dump_json().encode(),
            "oom_scaled": b"\x0a" + make_incident(changes=["root cause rank 12 -> 37"]).model_dump_json().encode(),
            "suspects": b"\x00" + make_incident(diagnosis=suspects, team="<!channel>").model_dump_json().encode(),
            "no_failure": b"\x00" + make_incident(diagnosis=nothing).model_dump_json().encode(),
            "markup": b"\x05" + make_incident(evidence=["```*bold* <@U0123> [/bold] \x1b[31m \u202e"],
                                              diagnosis=oom_diagnosis(["```", "[/]"])).model_dump_json().encode()}


def main() -> None:
    for target, seeds in {"wire": wire(), "shard_data": shard_data(), "logs": logs(), "catalog_file": catalog_file(),
                          "render": render()}.items():
        folder = CORPUS / target
        folder.mkdir(parents=True, exist_ok=True)
        for name, data in seeds.items():
            (folder / name).write_bytes(data)


if __name__ == "__main__":
    main()
