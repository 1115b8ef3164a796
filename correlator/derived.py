"""Failures no single line shows, only a relation between lines. Pure.

- Duplicate or missing ranks at launch: every PyTorch Lightning process announces the global rank it claims
  and the world size before init_process_group (`Initializing distributed: GLOBAL_RANK: k, MEMBER: k+1/N`,
  Lightning-AI/pytorch-lightning src/lightning/fabric/utilities/distributed.py; 1.x printed `initializing ddp:`).
  The same k claimed twice while some ranks of the N never appear is a launch that gave two processes one rank;
  the rendezvous then waits forever. A job-wide fault: no rank is named. Every claim distinct but some ranks of
  the N absent (no duplicate) is a hang at init whose absent ranks never started or never joined
  (launch.ranks_never_joined): reported only when nothing else failed.
- A checkpoint save that started and never finished: torchtitan, Megatron-LM, Hugging Face and DeepSpeed log a
  save's start and its end (the start lines are pytorch.checkpoint.save_hang's fingerprints, the end lines the
  `ckpt_saved` context records). A start that no finish follows, and then a failure, means the job died inside
  the save. A rank is named only when the others finished that save and it alone did not.

Each becomes an Event carrying its own weight and reason, as collective lags do (events.lag_events), so that it
is weighed and cited like any line.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass

from catalog.loader import Catalog
from catalog.model import Signature
from correlator.events import Event, Target
from correlator.exits import DEATH_CODES
from correlator.identity import IdentityMap
from correlator.kept import ContextRecord
from correlator.members import IMPLICATES_NAMED, ROLE_INITIATING, SEVERITY_CRITICAL, SEVERITY_ERROR
from correlator.stall_reports import stall_events
from schemas.findings import Finding, Speaker
from schemas.wire import MAX_WORLD_SIZE

DUPLICATE_RANK = "launch.duplicate_rank"
# Ranks of the world size nobody announced, none claimed twice: a hang at init (catalog/signatures/launch_ranks.yaml)
MISSING_RANKS = "launch.ranks_never_joined"
NCCL_DUPLICATE = "nccl.bootstrap.duplicate_rank"  # the bootstrap root's own report of the same fault
SAVE_HANG = "pytorch.checkpoint.save_hang"
W_DUPLICATE = 4.0  # the rank announcements of every process contradict each other: as strong as a named rank
W_MISSING = 1.0  # ranks never announced: they never started, or their logs are not here
W_SAVE_HANG = 2.5  # above a traceback's frame in a save (where, not what), below a specific cause after the start
W_SAVE_KILLED = 1.0  # a kill or crash ended it (SIGKILL, SIGSEGV, SIGBUS): that exit says more than where it was
KILLS = DEATH_CODES
MAX_CLAIM_LINES = 6
_JOB = Target(None, None)
_DERIVED_ORDER = 1 << 61  # after every line read, before collective lags: a stable tie-break

# Which framework printed a save's start or finish: a start is paired only with its own framework's finish.
_FAMILY = (("titan", re.compile(r"(?:Saving|Staging|Finished (?:saving|staging)) the checkpoint|Last step checkpoint|"
                                r"checkpoint (?:in [\w.]+ )?at last step")),
           ("megatron", re.compile(r"saving checkpoint at iteration|successfully saved checkpoint from iteration")),
           ("hf", re.compile(r"Saving model checkpoint to|Model weights saved in|checkpoint shards\. You can find")),
           ("deepspeed", re.compile(r"Checkpoint \S+ is (?:about to be saved|ready now)!")))
# Frameworks that print a finish line after every save in every release: their start alone, unfinished, counts.
# The others (Hugging Face's save of a PEFT model, DeepSpeed since its commit() went quiet) count once the same
# log showed a finish of theirs earlier.
_ALWAYS_FINISH = frozenset({"titan", "megatron"})


def derived_events(of_kind: Mapping[str, list[ContextRecord]], events: Sequence[Event], failures: Sequence[Event],
                   catalog: Catalog, ids: IdentityMap, present: Container[str] | None = None) -> list[Event]:
    """The events this module derives: ``events`` all of them (context ones too), ``failures`` the others.
    ``present``: the signatures of the events' findings, where the caller knows them (no save began without one
    of SAVE_HANG: every rank's findings are not read for it)."""
    out = _launch_ranks(of_kind.get("rank_claim", []), catalog, failures) or _launch_ranks(
        of_kind.get("rank_claim_env", []), catalog, failures)
    if not out and not any(ev.signature.id == NCCL_DUPLICATE for ev in failures):  # NCCL's root said it already
        out = _nccl_duplicates(of_kind.get("nccl_comm_start", []), catalog)
    # A start line may sit inside another event (a multi-line message ending in a timeout): read every finding.
    starts = [(f, ev.reporter.rank if f.speaker.rank is None else f.speaker.rank) for ev in events
              for f in ev.findings if f.signature == SAVE_HANG] if present is None or SAVE_HANG in present else []
    out += _unfinished_saves(starts, of_kind.get("ckpt_saved", []), failures, catalog, ids)
    out += stall_events(of_kind, catalog, ids)  # Horovod's stall inspector's missing ranks, one a line
    return out


def _derived(sig: Signature) -> Signature:
    """The entry as derived evidence: initiating, carrying its own weight and reason (scoring reads those for
    entries that name whom they implicate)."""
    return sig.model_copy(update={"role": ROLE_INITIATING, "implicates": IMPLICATES_NAMED,
                                  "severity": SEVERITY_CRITICAL if sig.severity is SEVERITY_CRITICAL
                                  else SEVERITY_ERROR})


def _finding(sig: Signature, rec_source: str, line_no: int, text: str, speaker: Speaker, order: int,
             time: object = None, clock: str | None = None) -> Finding:
    return Finding(signature=sig.id, role=ROLE_INITIATING, source=rec_source, line_no=line_no, text=text,
                   speaker=speaker, order=_DERIVED_ORDER + order, time=time,  # type: ignore[arg-type]
                   clock=clock)


def _spans(ranks: Sequence[int]) -> str:
    """0,1,2,3,7 -> '0-3, 7'"""
    out: list[str] = []
    for r in sorted(ranks):
        if out and r == int(out[-1].split("-")[-1]) + 1:
            out[-1] = f"{out[-1].split('-')[0]}-{r}"
        else:
            out.append(str(r))
    return ", ".join(out)


def _claimer(rec: ContextRecord) -> tuple[object, ...]:
    return (rec.who.host, rec.who.pid, rec.who.rank, rec.who.local_rank)


def _launch_ranks(claims: Sequence[ContextRecord], catalog: Catalog, failures: Sequence[Event]) -> list[Event]:
    """Two processes claiming one global rank, or ranks of the world size nobody claimed."""
    if not claims:
        return []
    # a world size past any honest job's is a garbled line, and would size the set of missing ranks below
    worlds = Counter(w for rec in claims if (w := int(rec.fields["world"])) <= MAX_WORLD_SIZE)
    if not worlds:
        return []
    world = worlds.most_common(1)[0][0]
    mine = [rec for rec in claims if int(rec.fields["world"]) == world]
    by_rank: dict[int, list[ContextRecord]] = defaultdict(list)
    for rec in mine:
        by_rank[int(rec.fields["rank"])].append(rec)
    missing = sorted(set(range(world)) - set(by_rank))
    counts = {len(recs) for recs in by_rank.values()}
    # Every rank claimed k times, none missing: k rounds of a restarted worker group, not duplicates.
    restarted = not missing and len(counts) == 1
    twice = sorted(r for r, recs in by_rank.items() if len(recs) >= 2 and not restarted
                   and (missing or len({rec.who.host for rec in recs if rec.who.host}) >= 2))
    if twice:
        never = f" and rank(s) {_spans(missing)} of the {world} never started" if missing else ""
        reason = (f"{sum(len(by_rank[r]) for r in twice)} processes claim the {len(twice)} global rank(s) "
                  f"{_spans(twice)} (two or more announce each one's GLOBAL_RANK){never}: the launch gave two "
                  "processes the same rank, so the rendezvous cannot complete")
        lines = [rec for r in twice for rec in by_rank[r]][:MAX_CLAIM_LINES]
        weight, which = W_DUPLICATE, DUPLICATE_RANK
    elif missing and len(missing) < world and not failures:  # a pure hang: else one node's log, the rest elsewhere
        reason = (f"rank(s) {_spans(missing)} of the {world} never announced their GLOBAL_RANK: they never started "
                  "(a launch that started fewer processes than the world size), or their logs are not here")
        lines = mine[:MAX_CLAIM_LINES]
        weight, which = W_MISSING, MISSING_RANKS  # distinct ranks, some absent: no duplicate to blame
    else:
        return []
    base = catalog.get(which)
    if base is None:
        return []
    sig = _derived(base)
    found = [_finding(sig, rec.source, rec.line_no, rec.text, Speaker(rank=rec.who.rank, host=rec.who.host,
                                                                      pid=rec.who.pid), i, rec.time)
             for i, rec in enumerate(lines)]
    return [Event(found[0], sig, found, _JOB, [_JOB], weight=weight, reason=reason)]


def _nccl_duplicates(starts: Sequence[ContextRecord], catalog: Catalog) -> list[Event]:
    """Two processes (distinct host:pid) starting one NCCL communicator (one commId) as the same rank. A restart
    makes a new unique id, so a new commId: repeats across attempts never meet here."""
    base = catalog.get(DUPLICATE_RANK)
    if base is None:
        return []
    by_slot: dict[tuple[str, int], dict[tuple[str, int], ContextRecord]] = defaultdict(dict)
    for rec in starts:
        if rec.who.host is not None and rec.who.pid is not None:
            by_slot[(str(rec.fields["comm"]), int(rec.fields["rank"]))].setdefault((rec.who.host, rec.who.pid), rec)
    twice = {slot: procs for slot, procs in by_slot.items() if len(procs) >= 2}
    if not twice:
        return []
    (comm, rank), procs = min(twice.items(), key=lambda item: item[0][1])
    lines = list(procs.values())[:MAX_CLAIM_LINES]
    claimers = ", ".join(f"{host}:{pid}" for host, pid in list(procs)[:4])
    ranks = sorted({r for _, r in twice})
    reason = (f"{len(procs)} processes ({claimers}) started NCCL communicator 0x{comm} as rank {rank} of "
              f"{lines[0].fields['nranks']}" + (f" (ranks {_spans(ranks)} are claimed twice)" if len(ranks) > 1
                                                else "") + ": the launch gave two processes the same rank")
    sig = _derived(base)
    found = [_finding(sig, rec.source, rec.line_no, rec.text, Speaker(rank=rank, host=rec.who.host, pid=rec.who.pid),
                      i, rec.time) for i, rec in enumerate(lines)]
    return [Event(found[0], sig, found, _JOB, [_JOB], weight=W_DUPLICATE, reason=reason)]


@dataclass(frozen=True)
class _Save:
    """One speaker's save starts and finishes of one framework, in their log's order."""

    key: tuple[str, object]  # ("rank", n) or ("source", path)
    family: str


def _family(text: str) -> str | None:
    return next((name for name, rx in _FAMILY if rx.search(text)), None)


def _key(rank: int | None, source: str) -> tuple[str, object]:
    return ("rank", rank) if rank is not None else ("source", source)


def _unfinished_saves(starts: Sequence[tuple[Finding, int | None]], finishes: Sequence[ContextRecord],
                      failures: Sequence[Event], catalog: Catalog, ids: IdentityMap) -> list[Event]:
    base = catalog.get(SAVE_HANG)
    if base is None or not starts:
        return []
    started: dict[_Save, list[Finding]] = defaultdict(list)
    for start, rank in starts:
        if (family := _family(start.text)) is not None:
            started[_Save(_key(rank, start.source), family)].append(start)
    finished: dict[_Save, list[ContextRecord]] = defaultdict(list)
    for rec in finishes:
        rank = rec.who.rank if rec.who.rank is not None else ids.rank_of(rec.who.host, rec.who.pid)
        if (family := _family(rec.text)) is not None:
            finished[_Save(_key(rank, rec.source), family)].append(rec)
    open_saves: dict[_Save, Finding] = {}
    closed: set[_Save] = set()
    for save, lines in started.items():
        last = max(lines, key=lambda f: f.line_no)
        after = [rec for rec in finished[save] if _later(rec.source, rec.line_no, rec.time, last)]
        earlier = [rec for rec in finished[save] if not _later(rec.source, rec.line_no, rec.time, last)]
        if after:
            closed.add(save)
        elif save.family in _ALWAYS_FINISH or earlier:
            open_saves[save] = last
    if not open_saves:
        return []
    reached: dict[str, int] = {}
    for start, _ in starts:
        reached[start.source] = max(reached.get(start.source, 0), start.line_no)
    return [ev for ev in [_save_event(open_saves, closed, failures, base, ids, reached)] if ev is not None]


def _later(source: str, line_no: int, time: object, start: Finding) -> bool:
    """Whether a line comes after the start: further down the same file, or stamped later."""
    if source == start.source:
        return line_no > start.line_no
    return time is not None and start.time is not None and time >= start.time  # type: ignore[operator]


def _ending(start: Finding, failures: Sequence[Event], reached: Mapping[str, int]) -> Event | None:
    """The first failure after the start: what ended the save (a timeout, a traceback, a kill, an exit report).
    In another file without comparable clocks, a failure printed after that file's own save start counts: that
    process had reached the save too (``reached``: each file's last save start line)."""
    after = [ev for ev in failures if not ev.stale and ev.weight is None
             and (_later(ev.best.source, ev.best.line_no, ev.best.time, start)
                  or (ev.best.source != start.source and ev.best.line_no > reached.get(ev.best.source, 1 << 62)))]
    return min(after, key=lambda ev: ev.best.order) if after else None


def _save_event(open_saves: dict[_Save, Finding], closed: set[_Save], failures: Sequence[Event], base: Signature,
                ids: IdentityMap, reached: Mapping[str, int]) -> Event | None:
    ended = {save: end for save, start in open_saves.items()
             if (end := _ending(start, failures, reached)) is not None}
    if not ended and not ids.exits:
        return None  # the log may simply stop while the save runs: nothing says the job died in it
    save, start = min(open_saves.items(), key=lambda item: item[1].order)
    others = {s for s in closed if s.family == save.family and s.key != save.key}
    lone = len(open_saves) == 1 and others and save.key[0] == "rank"
    rank = int(save.key[1]) if lone else None  # type: ignore[call-overload]
    target = Target(rank, ids.host_of_rank.get(rank) if rank is not None else None) if lone else _JOB
    who = f"rank {save.key[1]}" if save.key[0] == "rank" else str(save.key[1])
    end = ended.get(save)
    then = (f"before `{end.signature.id}` at {end.best.source}:{end.best.line_no}" if end is not None
            else "before the job's exit codes")
    reason = f"it died inside a checkpoint save: {who} started it and no finish line follows, {then}"
    if lone:
        reason += f"; {len(others)} other rank(s) finished the same save"
    elif len(open_saves) > 1:
        reason += f"; {len(open_saves)} speakers started it and none finished"
    killed = sorted({e.exit_code for e in ids.exits if e.exit_code in KILLS})
    if killed:
        reason += f"; exit code {killed[0]} ended it, which says more about why"
    sig = _derived(base)
    best = _finding(sig, start.source, start.line_no, start.text, start.speaker, 0, start.time, start.clock)
    found = [best] + ([_finding(sig, end.best.source, end.best.line_no, end.best.text, end.best.speaker, 1,
                                end.best.time, end.best.clock)] if end is not None else [])
    return Event(best, sig, found, target, [target], weight=W_SAVE_KILLED if killed else W_SAVE_HANG, reason=reason)
