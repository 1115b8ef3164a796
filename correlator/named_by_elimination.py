"""A rank that others name, placed on the one failing host that did not name it. Pure.

A coordination service names the process that stopped (JAX/XLA's "The following tasks are unhealthy (stopped
sending heartbeats): /job:jax_worker/replica:0/task:25", coordination_service.cc): every surviving process prints
it, and the task number is the process index, the rank. Nothing in a multi-host JAX job's logs ties a process
index to its host, so the named rank stays hostless while its host's own cause (the kernel's OOM kill, the
allocator's OOM, an Xid) stays rankless, and the two compete as strangers. The survivors are the hosts that
printed the report; a host that printed a cause of its own and not the report is the named process's, when it is
the only such host, it ran no other known rank, and the named rank is the only one without a host. Where no host
printed a cause, the named process's host is the one log that printed neither the report nor a consequence: a
host whose process reported losing a peer (NCCL's `remote process exited or there was a network error`, a
collateral line) was alive to see it go, as the survivors that printed the report were.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import NamedTuple

from catalog.loader import Catalog
from catalog.model import Implicates
from correlator.calibration import CAP_UNCONFIRMED
from correlator.identity import IdentityMap
from schemas.diagnosis import Diagnosis
from schemas.findings import Finding, Role


class Placement(NamedTuple):
    host: str
    by_absence: bool  # the host printed nothing that says so: it is the one log left once the others are read
    why: str = ""  # how it was found, said in the answer when it is held for it (held_by_absence)


def place_named_rank(findings: Sequence[Finding], catalog: Catalog, ids: IdentityMap,
                     source_hosts: Iterable[str] = (), present: Collection[str] | None = None) -> Placement | None:
    """Put the named rank on its host in ``ids`` (host_of_rank, sole_rank) where elimination leaves one; where, or
    None. ``source_hosts``: the host each log read is named after (logs/<host>.log), printed or not:
    where no host printed a cause, the one whose log holds no report at all is the named process's (its kernel
    log, where the OOM killer said why, was not collected). ``present``: the signatures among ``findings``, where
    known: only the findings of those that name a rank are read until one hostless rank is named (most jobs name
    none, or many: every finding read for them was 2.7% of correlation's counted lines at 8,192 ranks)."""
    implicates = {s: _implicates(catalog, s) for s in present} if present is not None else {}
    naming = {s for s, whom in implicates.items() if whom is Implicates.NAMED} if present is not None else None
    named: set[int] = set()
    survivors: set[str] = set()
    placed: dict[int, str] = {}  # ranks a report places itself ("srun: error: HOST: task N: Aborted")
    for f in findings if naming is None else [f for f in findings if f.signature in naming]:
        rank = f.fields.get("rank")
        if isinstance(rank, int) and _whom(implicates, catalog, f.signature) is Implicates.NAMED:
            if isinstance(host := f.fields.get("host"), str):
                placed.setdefault(rank, host)
                continue
            named.add(rank)
            if f.speaker.host is not None:
                survivors.add(f.speaker.host)
    hostless = [rank for rank in named if rank not in ids.host_of_rank and rank not in placed]
    if len(named) != 1 or len(hostless) != 1 or not survivors:  # no need of every rank's host to say so
        return None
    causes: set[str] = set()
    witnesses: set[str] = set()  # hosts whose process printed a consequence: alive when the failure came
    for f in findings:
        whom = _whom(implicates, catalog, f.signature)
        if whom is None or (whom is Implicates.NAMED and isinstance(f.fields.get("rank"), int)):
            continue
        about = _subject_host(f)
        if (f.role is Role.INITIATING and whom is Implicates.SELF and f.speaker.rank is None
                and about is not None and not f.generic):
            causes.add(about)
        elif f.role is Role.COLLATERAL and f.speaker.host is not None:
            witnesses.add(f.speaker.host)
    ranked_hosts = set(ids.host_of_rank.values()) | set(placed.values())
    left = causes - survivors - ranked_hosts
    by_absence = not left
    if by_absence:
        left = set(source_hosts) - survivors - ranked_hosts - causes - witnesses
    if len(named) != 1 or len(hostless) != 1 or len(left) != 1 or not survivors:
        return None
    host = next(iter(left))
    ids.host_of_rank[hostless[0]] = host
    ids.sole_rank.setdefault(host, hostless[0])
    why = (f"host {host}: the one log that printed neither the report naming rank {hostless[0]} nor a consequence "
           "of it (placed by elimination)")
    return Placement(host, by_absence, why)


def _subject_host(f: Finding) -> str | None:
    """The host a line of a fault of its own is about: the one it names (srun's "Node failure on HOST", printed on
    the submitting node: slurm/src/srun), as events.py's targets read it, else the host that printed it."""
    host = f.fields.get("host")
    return host if isinstance(host, str) else f.speaker.host


def _whom(memo: dict[str, Implicates | None], catalog: Catalog, signature: str) -> Implicates | None:
    """Whom ``signature``'s lines implicate (None: not in the catalog), asked of the catalog once a signature: a
    dozen a job, asked of every finding."""
    if signature not in memo:
        memo[signature] = _implicates(catalog, signature)
    return memo[signature]


def _implicates(catalog: Catalog, signature: str) -> Implicates | None:
    sig = catalog.get(signature)
    return None if sig is None else sig.implicates


def held_by_absence(d: Diagnosis, placed: Placement | None) -> Diagnosis:
    """A host placed only because its log is the one left (``by_absence``) is an inference from what is missing: a
    log not collected would move it. The rank the others name stays sure; the answer naming that host is held
    under 0.9, and says how the host was found."""
    rc = d.root_cause
    if rc is None or placed is None or not placed.by_absence or rc.host != placed.host \
            or rc.confidence <= CAP_UNCONFIRMED:
        return d
    held = rc.model_copy(update={"confidence": CAP_UNCONFIRMED, "explanation": [*rc.explanation, placed.why]})
    return d.model_copy(update={"root_cause": held})
