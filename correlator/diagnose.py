"""From the findings of every source to one diagnosis (the JSON contract of docs/contracts.md). Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Sized
from dataclasses import replace
from datetime import datetime, timedelta
from operator import attrgetter

from catalog.loader import Catalog
from catalog.model import Implicates, Signature
from correlator import calibration
from correlator.carried import read_carried
from correlator.derived import SAVE_HANG, derived_events
from correlator.differential import Suspect, differential
from correlator.event_summary import collateral_groups, timeline
from correlator.events import NO_ERROR_FILE, Event, Target, build_events, clock_offsets, lag_events, when
from correlator.exits import (
    EXIT_SIGNATURES,
    SIGNAL_TAGS,
    code_of,
    death_targets,
    exit_report,
    launcher_summary,
    task_exits,
)
from correlator.gpu_faults import pair_gpu_fault
from correlator.gpu_ids import with_gpu
from correlator.headline import UNRECOGNISED, headline, message
from correlator.host_fault_ranks import pin_node_faults
from correlator.identity import IdentityMap, build_identity, records_by_kind
from correlator.impact import with_impact
from correlator.job_ends import job_end_over
from correlator.killed_by_oom import place_killed_rank
from correlator.local_ranks import named_by_paths
from correlator.locate import locate, node_wide, pick
from correlator.members import ROLE_COLLATERAL, ROLE_CONTEXT
from correlator.named_by_elimination import held_by_absence, place_named_rank
from correlator.naming import settle
from correlator.nothing_matched import nothing_matched
from correlator.prepare import before_cascade, collective_lags, init_lines, mark_stale
from correlator.reading import SourceResult
from correlator.redact import EVIDENCE_CHARS, evidence_text, redact, redact_model
from correlator.release import gathered, let_go
from correlator.reporters import spare_messengers
from correlator.scoring import SKEW_TOLERANCE, W_EXIT_TEARDOWN, W_LAG, Candidate, score
from correlator.subgroups import group_rank_note, rests_on_group_rank
from correlator.transport import assign
from correlator.unexplained import Unexplained, cause_unknown
from correlator.worker_kills import worker_kills
from schemas.diagnosis import Alternative, Diagnosis, Evidence, RootCause
from schemas.findings import Finding, Role, Speaker
from schemas.wire import JobEvent

CONTEXT_READ = frozenset({SAVE_HANG, NO_ERROR_FILE})  # the context lines whose events a step below reads
MAX_EVIDENCE = 6
MIN_ALTERNATIVE_SCORE = 0.5  # below this a suspect holds only victims' lines: not worth a reader's time
_signature = attrgetter("signature")


def diagnose(
    results: Sequence[SourceResult], catalog: Catalog, rank_hosts: Mapping[int, str] | None = None, *,
    exit_codes: Mapping[str, int] | None = None, ended_at: datetime | None = None, release: bool = False,
) -> Diagnosis:
    """``exit_codes`` are the job metadata's (a JobEvent's), by rank ("37") or by host ("node004"). Without them,
    a JobEvent found among the sources (a ``job.json`` beside the logs) supplies them and the rank -> host map.

    The diagnosis comes back redacted (correlator/redact.py): this is the one place every output (the CLI's
    formats, the stored incident, the API, the web pages, the notifiers) gets its log text from.

    With ``release``, the caller hands the results over: each one's lists of findings and records are deleted
    once read, so that what a step is done with is freed (correlator/release.py)."""
    return redact_model(_diagnose(results, catalog, rank_hosts, exit_codes, ended_at, release))


def _diagnose(results: Sequence[SourceResult], catalog: Catalog, rank_hosts: Mapping[int, str] | None,
              exit_codes: Mapping[str, int] | None, ended_at: datetime | None = None,
              release: bool = False) -> Diagnosis:
    findings, context, read = gathered(results, release)  # ``results`` is not read again: ``read`` holds the rest
    job = next((s for s in read.structured if isinstance(s, JobEvent)), None)
    if job is not None:
        exit_codes = exit_codes if exit_codes is not None else job.exit_codes
        rank_hosts = rank_hosts if rank_hosts is not None else job.rank_hosts
        ended_at = ended_at or job.ended_at
    of_kind = records_by_kind(context)  # each step below reads records of one or two kinds: those alone
    ids = build_identity(context, rank_hosts, exit_codes, of_kind=of_kind)
    # one name per host and per rank
    named = settle(findings, context, of_kind, ids, rank_hosts, exit_codes, read.names)
    findings, context, of_kind, ids, local = named.findings, named.context, named.of_kind, named.ids, named.local
    del named  # it holds the two lists below, which are let go of once read (issue 23: memory per rank)
    del context  # each step below reads the records of its kinds (of_kind)
    # ranks whose logs arrived: NCCL's init lines name them, and so do the files' names (rank7.log)
    logged = {int(rec.fields["rank"]) for rec in of_kind.get("nccl_comm", ())}
    path_ranks, path_hosts = named_by_paths(read.with_lines(), local)
    logged |= path_ranks
    inits = init_lines(of_kind.get("nccl_comm", ()))  # what staleness reads of them
    let_go(of_kind, "nccl_using", "nccl_comm")  # read by identity, naming and the two lines above alone
    # a coordination service's named task, on the host that fell silent
    # (the steps below that need a signature present read no finding without it: present is their question, asked
    # once, in C)
    placed = place_named_rank(findings, catalog, ids, path_hosts, present := set(map(_signature, findings)))
    placed = placed or place_killed_rank(findings, catalog, ids)  # a SIGKILLed rank, the host that killed
    # the watchdog's `CUDA error: <an ECC error>` is that error (read before pairing: it is the rank's CUDA error)
    findings = read_carried(findings, catalog, present)
    present = set(map(_signature, findings))  # a carrier read as what it carries is that signature now
    pair_gpu_fault(findings, catalog, ids, present)  # the node's Xid and the rank's CUDA error: one GPU
    findings = worker_kills(findings, ids) or findings  # the kernel killed the worker a rank named
    del path_ranks, path_hosts
    # of the events of context lines, derived_events reads those of saves that began, cause_unknown the one below
    events = build_events(findings, catalog, ids, context_read=CONTEXT_READ)
    del findings  # the events hold them: a list of every finding is 4.6 pointers a rank, held to the end for nothing
    failures = [ev for ev in events if ev.role is not ROLE_CONTEXT]
    failures += derived_events(of_kind, events, failures, catalog, ids, present)  # relations between lines (derived.py)
    # The events of context lines (a survivor's work status: one a rank) are read by the line above and, for one
    # signature, by cause_unknown alone: what it reads is kept, the rest let go (issue 23: memory per rank).
    events = [ev for ev in events if any(f.signature == NO_ERROR_FILE for f in ev.findings)]
    if not failures:  # the differential view reads the error records alone
        return nothing_matched(read, of_kind.get("errorish", []), ids)
    progress, errors = of_kind.get("pg_status", []), of_kind.get("errorish", [])
    world = max(ids.world_size or 0, job.world_size or 0) if job is not None else ids.world_size
    failures += lag_events(collective_lags(progress, read.structured, failures, ids, world), catalog, ids, W_LAG)
    pin_node_faults(failures, ids)  # a node's line about one process, and the one rank singled out on that node
    offsets = clock_offsets(failures, progress, ids)
    mark_stale(failures, offsets, inits, [*progress, *of_kind.get("train_step", ())])
    del progress, inits
    let_go(of_kind, "pg_status")  # read by the steps above alone
    notes = assign(failures, ids, death_targets(ids.exits + task_exits(failures, ids), ids))
    # (the speakers with failures are a key a rank: made for this call alone, not held to the end)
    suspect = differential(errors, named_only=True, early=before_cascade(errors, failures, offsets),
                           failing={(ev.reporter.rank, None) if ev.reporter.rank is not None else
                                    (None, ev.reporter.host) for ev in failures})
    del errors
    let_go(of_kind, "errorish")  # read by the differential view alone
    if suspect is not None:  # the explanation quotes its first line cut to 100 characters: redacted before the cut
        suspect = replace(suspect, lines=[r._replace(text=redact(r.text)) for r in suspect.lines])
    spare_messengers(failures, len(logged | {ev.reporter.rank for ev in failures if ev.reporter.rank is not None}), ids)
    ranked = score(failures, ids, offsets, suspect, logged)
    made = _collateral_only(failures, ids, offsets) if not ranked else _assemble(
        ranked, failures, ids, offsets, read, catalog, notes, logged,
        cause_unknown(failures, of_kind, ids, events))  # only exit codes speak (unexplained.py)
    made = held_by_absence(made, placed)
    return with_impact(with_gpu(made, of_kind), of_kind, failures, offsets, world or len(logged) or None, ended_at)


def _root_cause(sig: Signature, rank: int | None, host: str | None, conf: float, time: datetime | None,
                evidence: list[Evidence], explanation: list[str], quote: bool = True) -> RootCause:
    """A catch-all entry's title (a fallback, or one the catalog marks ``quotes``) carries what its line said: the
    entry only says what kind of line failed. ``quote``: the evidence is that entry's own line."""
    said = message(evidence, sig) if quote and (sig.generic or sig.quotes) else None
    return RootCause(signature=sig.id, title=headline(sig.title, said), category=sig.category.value,
                     tags=list(sig.tags), rank=rank, host=host, confidence=conf, time=time, evidence=evidence,
                     explanation=explanation, message=said)


def _evidence(events: Sequence[Event]) -> list[Evidence]:
    """The first MAX_EVIDENCE distinct lines. Stops there: a rank that printed its failure 100,000 times (a retry
    loop) has events of as many findings, and comparing each with every line kept was quadratic."""
    out: list[Evidence] = []
    seen: set[tuple[str, int, str]] = set()
    for ev in events:
        for f in [ev.best, *ev.findings]:  # the line that decided first, then the rest of its event
            key = (f.source, f.line_no, f.text[:EVIDENCE_CHARS])
            if key in seen:
                continue
            seen.add(key)
            out.append(Evidence(source=f.source, line=f.line_no, text=evidence_text(f.text)))
            if len(out) == MAX_EVIDENCE:
                return out
    return out


def _root_events(cand: Candidate, root: Event) -> list[Event]:
    same = [ev for ev in cand.own_events if ev.signature.id == root.signature.id]
    return [root, *[ev for ev in same if ev is not root][:2]]


def _signal_code(root: Event, cand: Candidate, ids: IdentityMap) -> int | None:
    """The signal an answer known only by exit reports died of: its own report's code, else (srun's "task 0:
    Exited with exit code 1" is the agent's, whose workers died) the code torchrun's table gives that rank."""
    code = code_of(root.best.fields)
    if code in EXIT_SIGNATURES:  # unless the report's own entry names the signal (slurm.task_segfault)
        return None if SIGNAL_TAGS.intersection(root.signature.tags) else code
    rank = cand.target.rank
    if rank is None:
        return None
    return next((e.exit_code for e in ids.exits if e.rank == rank and not e.after_first
                 and e.exit_code in EXIT_SIGNATURES), None)


def _exit_event(cand: Candidate, ids: IdentityMap, catalog: Catalog) -> Event | None:
    """A rank only its exit code speaks for (a SIGKILL that left no line): the launcher entry for that code."""
    rec = next((e for e in ids.exits if e.rank == cand.target.rank and e.exit_code not in W_EXIT_TEARDOWN
                and (cand.target.rank is not None or e.host == cand.target.host)), None)
    sig = catalog.get(EXIT_SIGNATURES.get(rec.exit_code, "torchrun.worker_failed")) if rec else None
    if rec is None or sig is None:
        return None
    f = Finding(signature=sig.id, role=sig.role, source=rec.source, line_no=rec.line_no,
                text=f"exit code {rec.exit_code}" + (f" of rank {rec.rank}" if rec.rank is not None else ""),
                speaker=Speaker(rank=rec.rank, host=cand.target.host), fields={"exit_code": rec.exit_code})
    ev = Event(f, sig, [f], cand.target, [cand.target])
    cand.own_events.append(ev)
    return ev


def _assemble(ranked: list[Candidate], failures: list[Event], ids: IdentityMap,
              offsets: Mapping[str | None, timedelta], sources: Sized, catalog: Catalog,
              transport_notes: list[str], logged: set[int],
              unknown: Unexplained | None = None) -> Diagnosis:
    ranked, picked, exit_only = pick(ranked)
    if (job := job_end_over(ranked[0], failures, exit_only, ids)) is not None:  # the batch system ended it
        return _collateral_only(failures, ids, offsets, job_cause=job)
    cand = ranked[0]
    root = cand.best_event() or _exit_event(cand, ids, catalog)
    # Only exit codes say what happened (and for a kill or crash, they say it better than an absence or a victim's
    # line the same rank printed): the exit report is the root.
    if exit_only or (cand.death and (root is None or root.absence or root.role is Role.COLLATERAL)):
        root = next((ev for ev in cand.own_events if exit_report(ev)), None) or _exit_event(cand, ids, catalog) or root
    if cand.unique is not None and (root is None or exit_report(root) or root.role is Role.COLLATERAL
                                    or root.absence):
        return _unknown_suspect(ranked, failures, offsets, cand.unique)
    if root is None:  # only an exit code speaks for it
        return _collateral_only(failures, ids, offsets, ranked)
    if (root.role is Role.COLLATERAL and not cand.own_fault and not cand.support_events and not cand.death
            and root.waits_on is None):
        return _collateral_only(failures, ids, offsets, ranked)  # only victims' lines: the first says most
    sig = root.signature
    code = _signal_code(root, cand, ids) if exit_report(root) else None
    if code is not None:
        sig = catalog.get(EXIT_SIGNATURES[code]) or sig  # a failure table's "exitcode  : -11" row: the crash's class
    # Known only by its absence (the others wait where only it goes on): the waiting line names the cause, and
    # every rank that waited, the one cited included, is collateral.
    waits = root.waits_on
    waiting = waits[1] if waits is not None and waits[0] == cand.target and not cand.own_events else None
    if waiting is not None:
        sig = catalog.get(waiting.signature) or sig
    # No error file: the note says the cause is unknown, and a signal still says how the worker ended (its class)
    if unknown is not None and unknown.signature is not None and (code is None or unknown.signature != NO_ERROR_FILE):
        sig = catalog.get(unknown.signature) or sig
    rank, host, notes = locate(cand, root, failures, ids, sources, offsets, logged)
    root_events = {id(ev) for ev in cand.own_events if ev.role is not Role.COLLATERAL} | (
        set() if waiting is not None else {id(root)})
    if rank is not None:  # what the initiator printed later is part of its failure, not collateral
        root_events |= {id(ev) for ev in failures if ev.reporter.rank == rank}
    if rank is None and host is not None and len(node_wide(host, root, failures)) > 1:
        root_events |= {id(ev) for ev in failures if ev.reporter.host == host}  # a node-wide fault, its ranks' lines
    explanation = [f"{cand.target.label}: " + "; ".join(cand.reasons[:6])]
    explanation += picked + notes + transport_notes
    explanation += _why_not_others(ranked, failures, root_events)
    group_only = rests_on_group_rank(cand, rank, ids.group_ranks)  # a subgroup's rank, its global one not logged
    explanation += _clock_note(offsets) + group_rank_note(group_only)
    failing_hosts = len({ev.reporter.host for ev in failures} - {None})
    conf, feats = calibration.judge(ranked, sig, rank, host, hosts_failing=failing_hosts, group_rank_only=group_only)
    if unknown is not None:  # the exit codes' rank is a suspect: said first, and held under calibration's line
        explanation.insert(0, unknown.note)
        conf = min(conf, unknown.cap)
    verdict = "no_known_signature" if sig.generic else "diagnosed"
    return calibration.honest(Diagnosis(
        verdict=verdict,
        root_cause=_root_cause(sig, rank, host, conf, when(root, offsets), _evidence(_root_events(cand, root)),
                               explanation, quote=sig.id == root.signature.id),
        collateral=collateral_groups(failures, root_events),
        fix=sig.fix, verification=sig.verification,
        timeline=timeline(failures, root_events, offsets),
        alternatives=_alternatives(ranked, conf),
    ), ranked, feats, _evidence)


def _clock_note(offsets: Mapping[str | None, timedelta]) -> list[str]:
    """The clock offsets the timeline was corrected by, largest first, when any is worth mentioning."""
    big = sorted(((h, o) for h, o in offsets.items() if h and abs(o) > SKEW_TOLERANCE),
                 key=lambda item: -abs(item[1]))
    if not big:
        return []
    shown = ", ".join(f"{h} {o.total_seconds():+.0f} s" for h, o in big[:4])
    more = f" and {len(big) - 4} more" if len(big) > 4 else ""
    return [f"clock offsets estimated from lines that happen together (the same collective failing on every "
            f"rank), subtracted before any time ordering: {shown}{more}"]


def _why_not_others(ranked: list[Candidate], failures: Sequence[Event], root_events: set[int]) -> list[str]:
    lines = []
    victims = [ev for ev in failures if id(ev) not in root_events and ev.role is ROLE_COLLATERAL]
    if victims:
        ranks = {ev.reporter for ev in victims}
        sigs = sorted({ev.signature.id for ev in victims})
        lines.append(f"{len(ranks)} other rank(s)/host(s) show only consequences ({', '.join(sigs[:4])}): "
                     "their catalog role is collateral")
    for other in [c for c in ranked[1:] if c.score >= MIN_ALTERNATIVE_SCORE][:2]:
        lines.append(f"{other.target.label} scored {other.score:.1f} against {ranked[0].score:.1f}: "
                     + "; ".join(other.reasons[:2]))
    return lines


def _alternatives(ranked: list[Candidate], top_conf: float) -> list[Alternative]:
    out = []
    for other in [c for c in ranked[1:] if c.score >= MIN_ALTERNATIVE_SCORE][:3]:
        ev = other.best_event()
        out.append(Alternative(signature=ev.signature.id if ev else None, rank=other.target.rank,
                               host=other.target.host, confidence=calibration.share(other, ranked, top_conf)))
    return out


def _unknown_suspect(ranked: list[Candidate], failures: list[Event], offsets: Mapping[str | None, timedelta],
                     suspect: Suspect) -> Diagnosis:
    """No catalog entry names the cause, but one rank printed errors nobody else did before the cascade."""
    cand = ranked[0]
    conf, feats = calibration.judge(ranked, None, cand.target.rank, cand.target.host, "unknown_suspect")
    # what sequence numbers derived about it (its absence from a collective) is its failure, not collateral
    own = {id(ev) for ev in cand.own_events if ev.weight is not None}
    explanation = [f"{cand.target.label}: " + "; ".join(cand.reasons[:6]),
                   "no catalog entry matches its own lines: read them below",
                   *_why_not_others(ranked, failures, own)]
    evidence = [Evidence(source=r.source, line=r.line_no, text=evidence_text(r.text)) for r in suspect.lines]
    said = message(evidence)
    return calibration.honest(Diagnosis(
        verdict="no_known_signature",
        root_cause=RootCause(
            signature=None, title=headline(UNRECOGNISED, said), category="other", tags=[],
            rank=cand.target.rank, host=cand.target.host, confidence=conf, time=suspect.lines[0].time,
            evidence=evidence, explanation=explanation, message=said,
        ),
        collateral=collateral_groups(failures, own),
        timeline=timeline(failures, own, offsets),
        alternatives=_alternatives(ranked, conf),
    ), ranked, feats, _evidence)


def _collateral_only(failures: list[Event], ids: IdentityMap, offsets: Mapping[str | None, timedelta],
                     ranked: list[Candidate] | None = None, job_cause: Event | None = None) -> Diagnosis:
    """Only consequences were printed: the failing peer left nothing here. Point at what they name, or at the
    suspect that silence or metadata singles out. With ``job_cause``, the job itself was ended: name no one."""
    # the first line that says something of its own: not one the job ran on after (stale: a start-up retry an hour
    # before the end did not end it), not how processes ended, not the launcher's summary, not a wrapper (a result
    # code on its way up the stack says less than the line that set it)
    first = job_cause or min(failures, key=lambda ev: (ev.stale, exit_report(ev) or launcher_summary(ev),
                                                       ev.signature.wrapper, when(ev, offsets) is None, ev.best.order))
    sig: Signature = first.signature
    named = first.unmapped_peer
    target = first.implicated[0] if first.implicated and first.signature.implicates is not Implicates.SELF else None
    # A victim's own line names no initiator; but when every victim is on one host (a node whose processes were
    # all killed), that host is where it happened. Survivors' reports about their peers say nothing of their host.
    hosts = {t.host for ev in failures if not ev.survivor and not ev.stale
             and ev.signature.implicates is Implicates.SELF for t in ev.implicated}
    if target is None and len(hosts) == 1 and None not in hosts:
        target = Target(None, next(iter(hosts)))
    explanation = ["every line here is a consequence (catalog role collateral); the initiator printed nothing "
                   "in these logs"]
    if job_cause is not None:
        target, named = None, None
        explanation = [f"`{sig.id}` ends the whole job and names no process: the exit reports of its processes "
                       "follow from it, so no rank or host is named"]
    elif ranked:
        target = ranked[0].target
        explanation.insert(0, f"{target.label}: " + "; ".join(ranked[0].reasons[:6]))
        explanation += _why_not_others(ranked, failures, set())
    if named:
        explanation.append(f"the survivors name peer {named}: read that host's logs and kernel log")
    rank, host = (target.rank if target else None), (target.host if target else None) or named
    conf, feats = calibration.judge(ranked or [], sig, rank, host, "collateral_only")
    return calibration.honest(Diagnosis(
        verdict="diagnosed",
        root_cause=_root_cause(sig, rank, host, conf, when(first, offsets), _evidence([first]), explanation),
        collateral=collateral_groups(failures, set() if ranked else {id(first)}),
        alternatives=_alternatives(ranked, conf) if ranked else [],
        fix=sig.fix, verification=sig.verification,
        timeline=timeline(failures, set() if ranked else {id(first)}, offsets),
    ), ranked or [], feats, _evidence)
