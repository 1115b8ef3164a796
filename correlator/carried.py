"""A line that carries another error is read as that error: the watchdog's `... terminated with exception: CUDA
error: uncorrectable ECC error encountered` is an ECC error the watchdog happened to see first. Pure.

An entry says which capture holds the carried text (`carries` in the catalog); the entries it may be are its
`related` ones. Where one of those (specific, and carrying nothing itself) matches the text, the finding takes
that entry's id and role: the class, the fix and the verification follow the error, the line stays the same.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace

from catalog.loader import Catalog
from catalog.model import Signature, compiled
from schemas.findings import Finding


def carried_entry(sig: Signature, text: str, catalog: Catalog) -> Signature | None:
    """The related entry ``text`` (what ``sig``'s carried capture read) is, or None."""
    for rel in sig.related:
        inner = catalog.get(rel)
        if inner is None or inner.generic or inner.wrapper or inner.carries is not None:
            continue
        if any(compiled(fp.regex).search(text) for fp in inner.fingerprints):
            return inner
    return None


def read_carried(findings: Sequence[Finding], catalog: Catalog, present: Collection[str] | None = None
                 ) -> list[Finding]:
    """``findings`` with each carrier read as the error it carries; the same list when none is. ``present``: the
    signatures among ``findings``, where known (else each finding is asked)."""
    carriers = {sig.id: sig for sig in catalog.signatures if sig.carries is not None}
    if present is not None:
        if carriers.keys().isdisjoint(present):
            return list(findings)
    elif not carriers or not any(f.signature in carriers for f in findings):
        return list(findings)
    out = []
    for f in findings:
        sig = carriers.get(f.signature)
        text = f.fields.get(sig.carries) if sig is not None and sig.carries else None
        inner = carried_entry(sig, text, catalog) if sig is not None and isinstance(text, str) else None
        out.append(f if inner is None else replace(f, signature=inner.id, role=inner.role, generic=False))
    return out
