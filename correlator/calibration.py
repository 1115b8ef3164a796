"""Calibrated confidence: the ranked suspects' evidence as features, mapped to the probability that the named
initiator is right by a small fitted model, then capped by rules.

The probability is a conservative one: the fit weighs a wrong answer as three right ones (a confident wrong
answer posted to a team's channel costs more than a hesitant right one), so read a confidence as a floor: of the
answers given confidence c, about c or more were right in each bin of the simulator's reliability table.

The model (a logistic regression) is fitted offline by ``bench/calibrate.py`` on the corpus's tuning half and on
simulated jobs, and committed as constants in ``correlator/calibration_model.py``: evaluating it needs no numpy.
The caps are rules, not fitted: whatever the fit says, an answer whose rank has no cause-like line of its own, is
named by no other rank's desync report and by no sequence-number evidence of its own is never given 0.9 or more
(an exit code, others' blame, silence or a clock alone can be wrong in ways the fit data does not show), nor is
one whose rival has a cause of its own on another host (whose came first rests on two clocks).
Pure: no I/O, no time.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass

from catalog.model import Implicates, Scope, Signature
from correlator import calibration_model as model
from correlator.events import Event
from correlator.exits import TIED_FIRST, exit_report
from correlator.scoring import EARLIER_CAUSE, Candidate
from schemas.diagnosis import Diagnosis, Evidence, Suspect
from schemas.findings import Role

# Under it the named rank is at best a coin flip: the verdict lists suspects instead. From the reliability table
# (bench/calibrate.py --table, docs/accuracy.md; tuning half and simulator, 08:50 fit): of the answers under 0.5,
# 33% were right (47% of those from 0.3 to 0.5); from 0.5 to 0.6, 77%; from 0.6 up, 95% or more.
SUSPECTS_BELOW = 0.5
CAP_UNCONFIRMED = 0.85  # no cause-like line, naming report or sequence evidence of its own: never 0.9 or more
# Others' blame, an absence, a GPU's fault on a host only: leads, held under the 0.7 that reads as confident.
CAP_ASSUMED = 0.65
# A rank that is rank 0 only because a log has no rank prefixes (a paste of one process's output) is a guess, not
# evidence: on the real tuning halves of all nine sets (session 15) such answers were right once where a label
# names the initiator, wrong once, and 11 more were pastes whose readers could name no rank at all. Whose the
# cause is stays a suspect: under the line where the verdict lists suspects, whatever else the evidence says.
CAP_ASSUMED_RANK = 0.49  # SUSPECTS_BELOW - 0.01, written out: CAP_THIN is defined below
GPU_TAG = "gpu"  # the catalog's tag for a fault of one GPU (and so of the process using it)
CAP_NO_CATALOG = 0.6  # no catalog entry names the cause: the lines are a lead, not a diagnosis
THIN_SCORE = 1.0  # a top score under this is a victim's line or a catch-all match: too little to single anyone out
CAP_THIN = SUSPECTS_BELOW - 0.01  # such an answer naming a rank or host lists suspects, it names no initiator
FLOOR, CEILING = 0.05, 0.97  # a fitted logit is never certain either way
# Features the caps read and the fit never weighs (bench/calibrate.py leaves them out of the model).
CAP_ONLY = ("absent_only", "gpu_unplaced", "group_rank_only", "tied_first", "rival_elsewhere", "order_unsettled")
DEFAULT_PATH = "assembled"
PATHS = ("assembled", "collateral_only", "unknown_suspect")


@dataclass(frozen=True)
class Features:
    """What the top suspect's evidence is made of, and how far ahead of the next one it is. Each is in [0, 1]."""

    strength: float  # 1 - exp(-top score / 3): how much evidence in all
    thin: float  # the top score is under THIN_SCORE
    margin: float  # (top - second) / (top + 1): how far ahead of the next suspect
    cause: float  # a specific initiating line of its own (not an exit report, not derived, not stale)
    named: float  # another rank's report names it (a desync report, a barrier's missing ranks)
    sequence: float  # collective sequence numbers of its own (a lag, a Flight Recorder dump)
    own_line: float  # a failure line of its own that is not a cause: an either-role or generic line
    unique: float  # error lines no other rank printed (the differential view)
    exit_code: float  # an exit code or signal speaks for it
    others_only: float  # nothing of its own: others' blame, silence, its place in time
    exit_only: float  # of its own, only how it ended: an exit code, a signal, a launcher's or scheduler's report
    generic: float  # the signature named is a catch-all (or none at all)
    rival_cause: float  # the second suspect has a cause of its own too
    rival_same: float  # and it is the same failure: the fault may be every rank's, not this one's
    crowd: float  # log2(number of suspects) / 4, at most 1: many suspects, weaker evidence each
    job_wide: float  # no rank or host named: a fault of the whole job
    host_only: float  # a host named, not a rank
    unplaced: float  # a process's fault (the signature's scope is a rank) placed on a host only: whose was it?
    assumed_rank: float  # the rank named is an assumption (a log without rank prefixes is rank 0's), not evidence
    collateral_only: float  # every line is a consequence: the initiator printed nothing here
    unknown_suspect: float  # no catalog entry fits; a rank's unique lines are the lead
    no_suspect: float  # nobody scored at all: the answer is what the first consequence names
    # Names nobody, and nothing says the fault is the job's (no job-scope entry, no derived relation, no known rank
    # or host that locate() cleared because the whole job or several nodes share it): the owner is unknown, which is
    # not a claim that there is none, so it is held under the suspects line.
    unlocated: float = 0.0
    # A second, independent kind of evidence agrees: its exit code or signal, others' lines pointing at it, a naming
    # report or sequence numbers. One line alone, however specific, can sit on the wrong rank (a paste's prefixes,
    # two failures in one log), so it is not enough for 0.9.
    corroborated: float = 0.0
    # Why an answer that scores well can still be wrong (issue 22's checking half): others score nearly as high
    # (min(1, how many have 0.7 of the top's score or more / 3)), so the lead is a coin among several;
    contenders: float = 0.0
    # the rank is known only through a local rank (torchrun's `[defaultN]:`, a `--log-dir` folder) mapped to a global
    # one by the job's layout, never printed as the rank, so a wrong layout names the wrong rank;
    local_only: float = 0.0
    # and it has no cause-like line of its own while another suspect has one: how a fault ends beat why.
    outcaused: float = 0.0
    # Known only as the rank the others name (a coordination service's lost task, a barrier's missing rank), with no
    # line of its own and no host: the process may have gone down with its whole node, whose fault it then is.
    named_hostless: float = 0.0
    # Not fitted (no coefficient): caps. Singled out only by its absence from a collective the others waited in,
    # with no line of its own: a stalled process, or one whose node died or whose log is not here (issue 22's
    # node losses read as stragglers);
    absent_only: float = 0.0
    # a GPU's fault (an Xid, an ECC error) placed on its host only: the process on that GPU is the initiator, and a
    # host of several ranks leaves it unnamed;
    gpu_unplaced: float = 0.0
    # a lead only because its peer cannot be found: its lines of its own are transport errors about a peer no log
    # maps to a host (an InfiniBand work completion in error, NVIDIA/nccl src/transport/net_ib: the local HCA or
    # link, or the peer, the peer's whole node gone silent), nothing else but how it ended, while other hosts
    # printed failures too and none is the peer's (in a paste of the reporter's own output alone it stays the lead,
    # as the real tuning halves' labels had it: 2 of 2). A coin between two.
    peer_unmapped: float = 0.0
    # the rank named was read from a ProcessGroupNCCL subgroup's prefix alone ("[PG ID 2 PG GUID 3 Rank 0]": the
    # rank in that group) and no line gives the global rank it stands for (correlator/subgroups.py): it is the
    # global rank only if the group spans the world, which nothing says: the answer lists suspects.
    group_rank_only: float = 0.0
    # with no cause, naming report or sequence numbers of its own, headed by torchrun's "Root Cause" pick among
    # workers its agent recorded in the same second: ProcessFailure's timestamp is whole seconds and
    # ChildFailedError.get_first_failure's min() keeps the first tied row in dict order
    # (torch/distributed/elastic/multiprocessing/errors/__init__.py), so which of them failed first is not known.
    tied_first: float = 0.0
    # the likeliest rival with a cause of its own (not an exit, not collateral) is on another host: whose came first
    # rests on two clocks, set against each other only through estimated offsets (not asked where the answer names
    # nobody: a fault every rank shares);
    rival_elsewhere: float = 0.0
    # and the clocks did not settle it (no corrected gap beyond scoring.SKEW_TOLERANCE with the top first, or a
    # clock with no estimate): two independent failures in an unknown order, a coin between them.
    order_unsettled: float = 0.0

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def _exit(ev: Event) -> bool:
    """A report of how a process ended (a launcher's, a scheduler's `task N: Exited with exit code 1`): how a cause
    ends, not the cause."""
    return exit_report(ev) or "exit_code" in ev.best.fields or "signal" in ev.best.fields


def _its_own(ev: Event, cand: Candidate) -> bool:
    """The line is the candidate's: a rank's line names or was printed by that rank. A host's line a rank inherited
    (scoring folds a host's blame into the rank of that host with a fault of its own) is the host's, not the rank's."""
    rank = cand.target.rank
    return rank is None or ev.reporter.rank == rank or any(t.rank == rank for t in ev.implicated)


def has_cause(cand: Candidate) -> bool:
    """A specific catalog entry whose role is initiating, on its own lines: a cause, not a reaction."""
    return any(ev.role is Role.INITIATING and not ev.best.generic and not _exit(ev) and ev.weight is None
               and not ev.stale and _its_own(ev, cand) for ev in cand.own_events)


def _same_failure(top: Candidate, second: Candidate) -> bool:
    best, other = top.best_event(), second.best_event()
    return best is not None and other is not None and best.signature.id == other.signature.id and not _exit(best)


def _derived(cand: Candidate) -> bool:
    """Sequence-number evidence: events the correlator derived from collective progress, with their own weight."""
    return any(ev.weight is not None and ev.reason is not None for ev in cand.own_events)


def _absent_only(cand: Candidate) -> bool:
    """Its only evidence is its absence from a collective: others' sequence numbers and its silence."""
    return bool(cand.own_events) and all(ev.absence for ev in cand.own_events) and not cand.support_events


def _named(cand: Candidate) -> bool:
    return any(ev.signature.implicates is Implicates.NAMED and ev.weight is None and not ev.stale and not _exit(ev)
               and ev.reporter != cand.target for ev in cand.own_events)


def _own_line(cand: Candidate) -> bool:
    return any(ev.signature.implicates is Implicates.SELF and not _exit(ev) and not ev.stale
               and ev.role not in (Role.CONTEXT, Role.COLLATERAL) for ev in cand.own_events)  # inherited ones too


def _exit_code(cand: Candidate) -> bool:
    # the exit rules (scoring._exits) leave a reason, not an event: "exit code N ..."
    return any(_exit(ev) for ev in cand.own_events) or any(r.startswith("exit code") for r in cand.reasons)


NEAR_TOP = 0.7  # a rival with this share of the top's score or more is a contender


def _contenders(ranked: Sequence[Candidate]) -> float:
    if not ranked or ranked[0].score <= 0:
        return 0.0
    near = sum(1 for c in ranked[1:] if c.score >= NEAR_TOP * ranked[0].score)
    return min(1.0, near / 3)


def _local_only(cand: Candidate, rank: int | None) -> bool:
    """The rank named is the candidate's, and every line of its own that speaks for it came with a local rank: no
    line printed the global rank (a `[rankN]:` prefix, a report naming it, sequence numbers of its own)."""
    if rank is None or cand.target.rank != rank or _named(cand) or _derived(cand):
        return False
    speakers = [f.speaker for ev in cand.own_events for f in ev.findings if f.speaker.rank == rank]
    return bool(speakers) and all(s.local_rank is not None for s in speakers)


def _rival_elsewhere(ranked: Sequence[Candidate]) -> bool:
    rival = next((c for c in ranked[1:] if has_cause(c)), None)
    top_host = ranked[0].target.host if ranked else None
    return rival is not None and (top_host is None or rival.target.host != top_host)


def features(ranked: Sequence[Candidate], sig: Signature | None, rank: int | None, host: str | None,
             path: str = DEFAULT_PATH, hosts_failing: int = 1, group_rank_only: bool = False) -> Features:
    """The features of a diagnosis naming ``ranked[0]`` (at ``rank``/``host``, as located) with ``sig`` (None: no
    catalog entry), by ``path``; ``hosts_failing``: how many hosts printed a failure line; ``group_rank_only``:
    the rank is a subgroup's, not known to be global (correlator/subgroups.py)."""
    top = ranked[0] if ranked else None
    top_score = top.score if top else 0.0
    second = ranked[1] if len(ranked) > 1 else None
    second_score = second.score if second else 0.0
    cause = bool(top and has_cause(top))
    named = bool(top and _named(top))
    sequence = bool(top and _derived(top))
    own_line = bool(top and _own_line(top)) and not cause
    unique = bool(top and top.unique is not None)
    exit_code = bool(top and _exit_code(top))
    others = not (cause or named or sequence or own_line or unique or exit_code)
    exit_only = exit_code and not (cause or named or sequence or own_line or unique)
    return Features(
        strength=1 - math.exp(-max(top_score, 0.0) / 3.0), thin=float(top_score < THIN_SCORE),
        margin=max(0.0, top_score - second_score) / (top_score + 1.0),
        cause=float(cause), named=float(named), sequence=float(sequence), own_line=float(own_line),
        unique=float(unique), exit_code=float(exit_code), others_only=float(others), exit_only=float(exit_only),
        generic=float(sig is not None and sig.generic),
        rival_cause=float(bool(second and has_cause(second))),
        rival_same=float(bool(second and top and _same_failure(top, second))),
        crowd=min(1.0, math.log2(max(1, len(ranked))) / 4),
        job_wide=float(rank is None and host is None), host_only=float(rank is None and host is not None),
        unplaced=float(rank is None and host is not None and sig is not None and sig.scope is Scope.RANK),
        absent_only=float(bool(top and _absent_only(top))),
        gpu_unplaced=float(rank is None and host is not None and sig is not None and GPU_TAG in sig.tags),
        peer_unmapped=float(top is not None and not (cause or named or sequence or own_line)
                            and any(ev.unmapped_peer is not None for ev in top.own_events)
                            and hosts_failing > 1),
        assumed_rank=float(top is not None and top.target.rank is None and rank is not None),
        collateral_only=float(path == "collateral_only"), unknown_suspect=float(path == "unknown_suspect"),
        no_suspect=float(top is None),
        contenders=_contenders(ranked),
        local_only=float(bool(top and _local_only(top, rank))),
        outcaused=float(bool(top) and not cause and any(has_cause(c) for c in ranked[1:])),
        named_hostless=float(top is not None and named and not sequence and rank is not None and host is None
                             and all(ev.reporter != top.target for ev in top.own_events)),
        corroborated=float(named or sequence or (cause and (exit_code or bool(top and top.support_events)))),
        unlocated=float(rank is None and host is None and not sequence
                        and not (sig is not None and sig.scope is Scope.JOB)
                        and not (top is not None and (top.target.rank is not None or top.target.host is not None)
                                 and not _node_unnamed(top, sig))),
        group_rank_only=float(group_rank_only and rank is not None),
        tied_first=float(bool(top and any(r.startswith(TIED_FIRST) for r in top.reasons))
                         and not (cause or named or sequence)),
        rival_elsewhere=float(elsewhere := cause and not (rank is None and host is None) and _rival_elsewhere(ranked)),
        order_unsettled=float(elsewhere and not any(EARLIER_CAUSE in r for r in ranked[0].reasons)),
    )


def _node_unnamed(top: Candidate, sig: Signature | None) -> bool:
    """A node's fault (its /dev/shm, its NIC) that several of its ranks report, which locate() lifts from the rank
    to the node, where no line names the node: nobody is named, and not because the job shares the fault. Its ranks
    with no host known may not even share one node, so which node it was is not known either."""
    return sig is not None and sig.scope is Scope.NODE and top.target.host is None and top.target.rank is not None


def fitted(values: Mapping[str, float], coefficients: Mapping[str, float] | None = None,
           intercept: float | None = None) -> float:
    """The fitted model's probability, before the caps."""
    coef = model.COEFFICIENTS if coefficients is None else coefficients
    z = model.INTERCEPT if intercept is None else intercept
    z += sum(w * values.get(name, 0.0) for name, w in coef.items())
    return 1 / (1 + math.exp(-max(-30.0, min(30.0, z))))


def _rank_sequence(f: Features) -> bool:
    """Sequence evidence of a rank's own. On an answer naming nobody the derived evidence is a relation the
    correlator drew between lines (two processes announcing one global rank, ...): no rank's own collective
    progress, so it does not stand for the own evidence 0.9 needs."""
    return bool(f.sequence) and not f.job_wide


def _names_no_rank(f: Features) -> bool:
    """A host only, or nobody: whatever its evidence, none of it is a rank's own, and which process on the host (or
    whether one process of the job) began it is left open. Out of fold (docs/accuracy.md, calib26), where the label
    names an initiator, such answers at 0.9 or more were right 12 times in 18; the rest, 1,131 times in 1,133."""
    return bool(f.host_only or f.job_wide)


def _tied_with_a_rank(f: Features) -> bool:
    """The fault is the job's only by an inferred relation, and a rank or host with lines of its own scores nearly as
    high: the relation may be how that rank's failure looks from the others (a restart re-announcing ranks), so the
    answer is a choice between the two, not a finding."""
    return bool(f.job_wide and f.sequence and f.contenders)


def _blamed_like_a_rival(f: Features) -> bool:
    """Nothing of its own (no cause, report, sequence numbers, line, unique error or exit code): only what the
    survivors printed about it, and another suspect has 0.7 of its score or more from the same kind of lines. Which
    peer the survivors lost first is then a coin: each survivor names the peer its own connection ran to (NCCL's
    `Connection closed by remote peer` in src/misc/socket.cc, `Got completion from peer` in
    src/transport/net_ib.cc), and a teardown closes the dead peer's connections and the healthy ones' alike."""
    return bool(f.others_only and f.contenders)


def cap(f: Features) -> float:
    """The highest confidence the evidence allows, whatever the fit says."""
    limit = CEILING
    if not (f.cause or f.named or _rank_sequence(f)) or f.unplaced or f.assumed_rank or not f.corroborated \
            or _names_no_rank(f):
        # a process's fault that no rank owns (a kernel's kill on a host whose ranks no line maps) is no rank's own;
        # nor is a line in a log without rank prefixes, which is rank 0's only by assumption
        limit = min(limit, CAP_UNCONFIRMED)
    if f.named_hostless or f.absent_only or f.gpu_unplaced or f.peer_unmapped \
            or _blamed_like_a_rival(f):
        limit = min(limit, CAP_ASSUMED)
    if f.assumed_rank:
        limit = min(limit, CAP_ASSUMED_RANK)
    if f.unknown_suspect:
        limit = min(limit, CAP_NO_CATALOG)
    if f.thin and not f.job_wide:
        limit = min(limit, CAP_THIN)
    # a subgroup's rank: a coin, if the group spans the world or not (a tensor-parallel group of ranks 4-7 prints
    # 0-3); a tied "Root Cause" row: a coin among the workers of that second
    if f.unlocated or _tied_with_a_rank(f) or f.group_rank_only or f.tied_first:
        limit = min(limit, CAP_THIN)
    # two causes on two hosts: never 0.9 on clocks read through estimated offsets; with no order the clocks settle,
    # both are suspects, unless another rank's report or its own collective sequence numbers (immune to skew) say
    # it stopped first
    if f.rival_elsewhere:
        unsettled = f.order_unsettled and not (f.named or _rank_sequence(f))
        limit = min(limit, CAP_THIN if unsettled else CAP_UNCONFIRMED)
    return limit


def calibrated(f: Features) -> float:
    """The probability that the named initiator is right: the fit, held under the caps, rounded for the JSON."""
    return round(max(FLOOR, min(cap(f), fitted(f.as_dict()))), 2)


def judge(ranked: Sequence[Candidate], sig: Signature | None, rank: int | None, host: str | None,
          path: str = DEFAULT_PATH, hosts_failing: int = 1, group_rank_only: bool = False) -> tuple[float, Features]:
    """The calibrated confidence of naming ``ranked[0]`` at ``rank``/``host`` with ``sig``, and what it was computed
    from."""
    f = features(ranked, sig, rank, host, path, hosts_failing, group_rank_only)
    return calibrated(f), f


def share(cand: Candidate, ranked: Sequence[Candidate], top_confidence: float) -> float:
    """A runner-up's probability: what the top leaves (1 - its confidence), split by score among the others, and
    never above the top's (the rest of what the top leaves is on ranks whose logs are not here)."""
    rest = sum(c.score for c in ranked[1:] if c.score > 0)
    if rest <= 0:
        return 0.0
    return round(min(top_confidence, (1 - top_confidence) * max(cand.score, 0.0) / rest), 2)


MAX_SUSPECTS = 5
SUSPECT_EVIDENCE = 3
SUSPECT_REASONS = 4
MIN_SUSPECT_SCORE = 0.5  # as diagnose's alternatives, unless the top itself scores under twice this


def honest(d: Diagnosis, ranked: Sequence[Candidate], f: Features | None,
           evidence_of: Callable[[Sequence[Event]], list[Evidence]]) -> Diagnosis:
    """Under SUSPECTS_BELOW the diagnosis says it is not sure: a `diagnosed` verdict becomes `suspects`, and the
    ranked candidates are listed with their evidence. `root_cause` keeps the likeliest, for older readers."""
    d._features = f.as_dict() if f is not None else None
    rc = d.root_cause
    if rc is None or rc.confidence >= SUSPECTS_BELOW:
        return d
    top = Suspect(rank=rc.rank, host=rc.host, signature=rc.signature, confidence=rc.confidence,
                  evidence=rc.evidence[:SUSPECT_EVIDENCE],
                  reasons=ranked[0].reasons[:SUSPECT_REASONS] if ranked else rc.explanation[:SUSPECT_REASONS])
    listed = [top]
    floor = min(MIN_SUSPECT_SCORE, ranked[0].score / 2) if ranked else 0.0  # thin evidence: thin rivals count
    for cand in [c for c in ranked[1:] if c.score >= floor][:MAX_SUSPECTS - 1]:
        best = cand.best_event()
        lines = [best] if best is not None else []
        lines += [ev for ev in [*cand.own_events, *cand.support_events] if ev is not best]
        listed.append(Suspect(rank=cand.target.rank, host=cand.target.host,
                              signature=best.signature.id if best else None,
                              confidence=share(cand, ranked, rc.confidence),
                              evidence=evidence_of(lines)[:SUSPECT_EVIDENCE], reasons=cand.reasons[:SUSPECT_REASONS]))
    note = (f"not sure: a confidence of {rc.confidence:.0%} is under {SUSPECTS_BELOW:.0%}, so {len(listed)} "
            "suspect(s) are listed, likeliest first, rather than one initiator")
    rc.explanation.insert(0, note)
    d.suspects = listed
    if d.verdict == "diagnosed":
        d.verdict = "suspects"
    return d
