"""Applying the knobs (lost and truncated shards, one interleaved file) and writing the job with its truth."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

from schemas.wire import JobEvent
from simulate import hostile
from simulate.cascade import Failure, Knobs
from simulate.cluster import Job, Kind, Shard


@dataclass
class Truth:
    """The ground truth of one simulated job."""

    scenario: str
    rank: int | None  # the initiating rank; None for a node-level or job-wide fault
    host: str | None  # its host; None for a job-wide fault
    signature_hint: str  # |-separated substrings, one of which the reported signature id should contain
    world_size: int
    files: list[Path] = field(default_factory=list)
    collateral: set[int] = field(default_factory=set)  # ranks whose written logs hold consequences
    exit_codes: dict[str, int] = field(default_factory=dict)  # as a JobEvent carries them: rank -> exit code
    rank_hosts: dict[int, str] = field(default_factory=dict)
    second: tuple[int | None, str | None] | None = None
    aliases: dict[str, list[str]] = field(default_factory=dict)  # with the host-alias knob: node -> every name

    @property
    def job_wide(self) -> bool:
        return self.rank is None and self.host is None


def _lose_and_cut(job: Job, failure: Failure, knobs: Knobs, rng: random.Random) -> None:
    """Other ranks' logs go missing or end early; node logs (kernel, torchrun) go missing half as often, the
    initiator's node's included: collectors miss those too, and then the evidence is simply not there."""
    for shard in [s for s in job.shards.values() if s.stream in ("node", "agent")]:
        if rng.random() < knobs.missing / 2:
            del job.shards[shard.path]
    ranks = [s for s in job.shards.values() if s.stream == "rank" and s.rank not in failure.protect]
    for shard in ranks:
        roll = rng.random()
        if roll < knobs.missing:
            del job.shards[shard.path]
        elif roll < knobs.missing + knobs.truncated and len(shard.lines) > 2:
            keep = rng.randrange(len(shard.lines) // 2, len(shard.lines))
            shard.lines = sorted(shard.lines, key=lambda ln: ln.time)[:keep]
            last = shard.lines[-1]
            last.text = last.text[: max(1, len(last.text) // 2)]  # the copy stopped mid-line
            if last.kind is Kind.COLLATERAL:
                last.kind = Kind.INFO  # half a line is no longer evidence anyone should count on


def _prefixed(shard: Shard, text: str) -> str:
    if shard.stream == "rank":
        return text if text.startswith(f"[rank{shard.rank}]") else f"[rank{shard.rank}]: {text}"
    if shard.stream in ("node", "agent") and shard.host:
        return f"{shard.host}: {text}"
    return text


def _render(shard: Shard) -> bytes:
    if shard.blob is not None:
        return shard.blob
    ordered = sorted(shard.lines, key=lambda ln: ln.time)
    return ("\n".join(ln.text for ln in ordered) + "\n").encode()


def _interleave(job: Job) -> None:
    """Every text shard into one file in arrival order, each line prefixed with who printed it."""
    merged = Shard("job.log", stream="scheduler")
    for shard in list(job.shards.values()):
        if shard.blob is not None:
            continue
        for ln in shard.lines:
            ln.text = _prefixed(shard, ln.text)
            merged.lines.append(ln)
        del job.shards[shard.path]
    job.shards[merged.path] = merged


def _collateral(job: Job) -> set[int]:
    return {s.rank for s in job.shards.values()
            if s.rank is not None and s.blob is None and any(ln.kind is Kind.COLLATERAL for ln in s.lines)}


def write(job: Job, scenario: str, failure: Failure, knobs: Knobs, out: Path, rng: random.Random) -> Truth:
    c = job.c
    _lose_and_cut(job, failure, knobs, rng)
    collateral = _collateral(job) - ({failure.rank} if failure.rank is not None else set())
    if failure.second and failure.second[0] is not None:
        collateral.discard(failure.second[0])
    names = hostile.apply(job, failure, knobs)

    def host(name: str | None) -> str | None:  # the truth names a node as its scheduler does
        return names[name].scheduler if name in names else name

    if knobs.interleaved and hostile.labelled(knobs):
        hostile.interleave(job)
    elif knobs.interleaved and knobs.local_prefix != "logdir":
        _interleave(job)
    second = (failure.second[0], host(failure.second[1])) if failure.second else None
    truth = Truth(scenario, failure.rank, host(failure.host), failure.hints, c.world_size, collateral=collateral,
                  exit_codes=failure.exit_codes, rank_hosts={r: host(c.host(r)) or "" for r in range(c.world_size)},
                  second=second, aliases={n.scheduler: sorted(n.all()) for n in names.values()})
    if knobs.job_file:
        event = JobEvent(job_id="881234", scheduler="slurm", state="failed", world_size=c.world_size,
                         hosts=sorted(set(truth.rank_hosts.values())), rank_hosts=truth.rank_hosts,
                         exit_codes=failure.exit_codes)
        job.shards["job.json"] = Shard("job.json", stream="scheduler", blob=event.model_dump_json().encode())
    for shard in job.shards.values():
        path = out / shard.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(_render(shard))
        truth.files.append(path)
    return truth
