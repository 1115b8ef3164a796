"""The catalog entry schema: every signature file is validated against this at load."""

from __future__ import annotations

import re
from enum import StrEnum
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from catalog.expect import Expectation
from schemas.findings import Role


def _head(text: str, limit: int = 80) -> str:
    """A regex as an error message quotes it: a 100 kB one is not worth a screenful."""
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}... ({len(text)} characters)"


ID_RE = re.compile(r"^[a-z0-9_]+(\.[a-z0-9_]+)+$")

# Named captures the correlator understands. A fingerprint may use others; these carry meaning.
KNOWN_FIELDS = frozenset(
    {
        "peer",  # address of the remote side, "10.1.2.3<port>" or "host:port": blames that peer
        "rank",  # a rank named inside the message ("[Rank 3]", "rank 3 of 8")
        "ranks",  # a list of ranks named inside the message ("1,5,7")
        "local_rank",
        "host",  # a host named inside the message
        "pid",
        "seq",  # collective sequence number (watchdog SeqNum, desync "#183")
        "last_seq",  # last completed collective (desync "finished collective #182")
        "op",  # collective OpType
        "xid",
        "pci",
        "exit_code",
        "signal",
        "timeout_ms",
        "errno",
        "status",
        "device",
        "interface",
        "version",
        "detail",
    }
)


class Category(StrEnum):
    COMMUNICATION = "communication"
    GPU = "gpu"
    CUDA = "cuda"
    MEMORY = "memory"
    HOST = "host"
    STORAGE = "storage"
    SCHEDULER = "scheduler"
    CONFIGURATION = "configuration"
    LAUNCHER = "launcher"
    FRAMEWORK = "framework"
    NUMERICS = "numerics"
    SERVING = "serving"
    HANG = "hang"
    OTHER = "other"


class Severity(StrEnum):
    CRITICAL = "critical"  # the job cannot survive this
    ERROR = "error"
    WARNING = "warning"  # notable, often not fatal on its own
    INFO = "info"  # context only


class Scope(StrEnum):
    """What the fault belongs to when it is the root cause."""

    RANK = "rank"  # one process
    NODE = "node"  # a host (GPU, NIC, kernel): name the host; rank when the GPU maps to one
    JOB = "job"  # a configuration every rank shares: when it shows everywhere, name no single rank


class Implicates(StrEnum):
    """Whom the line points at."""

    SELF = "self"  # the rank or host that printed it
    PEER = "peer"  # the remote address in the `peer` capture
    NAMED = "named"  # the rank(s) named in the `rank`/`ranks` capture
    MAIN = "main"  # the job's main process, rank 0: the one these lines wait on (a barrier only it skips)
    NONE = "none"  # nobody in particular (a summary, a wrapper)


@lru_cache(maxsize=1024)
def compiled(regex: str) -> re.Pattern[str]:
    """A fingerprint's regex compiled once, read as the matcher reads it (ASCII), for steps that search one line."""
    return re.compile(regex, re.ASCII)


class Fingerprint(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    regex: str = Field(min_length=3)
    # A looser expression the scanning engine looks for instead of ``regex`` (the line is then confirmed with
    # ``regex``): for a pattern that is slow to scan for, e.g. one anchored at a line start with an optional word,
    # or led by a word every log line holds. It must match wherever ``regex`` does (checked on the examples).
    prefilter: str | None = Field(default=None, min_length=3)
    note: str | None = None

    @field_validator("regex", "prefilter")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        try:
            re.compile(value or "")
        # re raises OverflowError for a repetition count over 2**32 - 1 (`a{4294967296}`) and RecursionError
        # for groups nested a few hundred deep: as invalid as a syntax error, and pydantic passes neither on as
        # a validation error (only ValueError and AssertionError)
        except (re.error, OverflowError, RecursionError) as exc:
            raise ValueError(f"bad regex {_head(value or '')}: {type(exc).__name__}: {exc}") from exc
        return value


class Examples(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    positive: list[str] = Field(min_length=1)
    negative: list[str] = Field(default_factory=list)


class Signature(BaseModel):
    """One failure class."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    id: str = Field(json_schema_extra={"pattern": ID_RE.pattern})  # the validator below says why it failed
    title: str = Field(min_length=3, max_length=140)
    category: Category
    tags: list[str] = Field(default_factory=list)
    severity: Severity
    role: Role
    scope: Scope = Scope.RANK
    implicates: Implicates = Implicates.SELF
    generic: bool = Field(False, description="a catch-all fallback: any specific entry on the same line wins")
    # The message wraps a cause printed elsewhere (ncclSystemError, "NCCL error in: ..."): it ranks below any
    # specific cause found on the same rank or its peers.
    wrapper: bool = False
    carries: str | None = Field(
        None, description="the capture that holds an error this line carries (the watchdog's `CUDA error: ...`): "
        "where an entry in `related` matches that text, the line is that entry's")
    # A catch-all (a Python exception, NCCL's "Cuda failure '<text>'") whose title cannot say which error it is:
    # the line says it, so the report's title quotes the line from where the fingerprint matched.
    quotes: bool = Field(False, description="the title cannot say which error this is, the line does: the "
                         "report's title quotes the line from where the fingerprint matched")
    fingerprints: list[Fingerprint] = Field(min_length=1)
    meaning: str = Field(min_length=10)
    discriminators: list[str] = Field(default_factory=list)
    checklist: list[str] = Field(default_factory=list)
    fix: str = Field(min_length=5)
    verification: str = Field(min_length=3, description="one runnable command and a `# expect ...` comment")
    expect: Expectation | None = Field(None, description="what a pass of `verification` means, for `firstfault "
                                       "verify` (catalog/expect.py); without it a pass is exit status 0")
    related: list[str] = Field(default_factory=list)
    # Entries that name the failure this line leads to on the same host (an uncorrected PCIe error, then the GPU
    # behind the link falling off the bus), or the fault this line is a process's view of (a CUDA NVLink error and
    # the NVSwitch's SXid): where a suspect has both, the diagnosis names that one, and this line is cited too.
    yields_to: list[str] = Field(default_factory=list)
    references: list[str] = Field(default_factory=list)
    examples: Examples

    @field_validator("id")
    @classmethod
    def _dotted(cls, value: str) -> str:
        if not ID_RE.match(value):
            raise ValueError(f"id {value!r} must be dotted lower-case, e.g. nccl.bootstrap.connection_reset")
        return value

    @model_validator(mode="after")
    def _prefilters_cover_examples(self) -> Signature:
        for fp in self.fingerprints:
            if fp.prefilter is None:
                continue
            for line in self.examples.positive:
                if re.search(fp.regex, line, re.ASCII) and not re.search(fp.prefilter, line, re.ASCII):
                    raise ValueError(f"prefilter {fp.prefilter!r} misses a positive example its regex matches: "
                                     f"{line!r}")
        return self

    @model_validator(mode="after")
    def _carried_capture_exists(self) -> Signature:
        if self.carries is not None and not self.related:
            raise ValueError(f"carries={self.carries!r} but no related entries to read the carried error as")
        if self.carries is not None and not all(self.carries in re.compile(fp.regex).groupindex
                                                for fp in self.fingerprints):
            raise ValueError(f"carries={self.carries!r} but a fingerprint has no capture of that name")
        return self

    @model_validator(mode="after")
    def _implicated_capture_exists(self) -> Signature:
        needed = {Implicates.PEER: ("peer",), Implicates.NAMED: ("rank", "ranks")}.get(self.implicates)
        if needed and not any(
            n in re.compile(fp.regex).groupindex for fp in self.fingerprints for n in needed
        ):
            raise ValueError(
                f"implicates={self.implicates.value} but no fingerprint has a named capture "
                f"{' or '.join(needed)}"
            )
        return self


class CatalogFile(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    version: Literal[1]
    signatures: list[Signature]


SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def catalog_json_schema() -> dict[str, Any]:
    """The JSON Schema of one catalog file, for editors; committed as catalog/schema.json (a test keeps it
    equal). It cannot say that regexes compile or that `related` ids exist: the loader and `catalog lint` do."""
    schema = CatalogFile.model_json_schema()
    return {"$schema": SCHEMA_DIALECT, **schema, "title": "firstfault signature catalog file",
            "description": "catalog/signatures/*.yaml or a FIRSTFAULT_CATALOG_PATH file (docs/CATALOG_AUTHORING.md)"}
