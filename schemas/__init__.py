"""Wire and domain models shared by every part of firstfault, and the one error tree."""

from schemas.diagnosis import (
    Alternative,
    CollateralGroup,
    Diagnosis,
    Evidence,
    RootCause,
    TimelineEntry,
)
from schemas.errors import (
    CatalogError,
    FirstfaultError,
    InvalidMessage,
    PermanentError,
    RetryableError,
    TransportError,
    UsageError,
)
from schemas.findings import Finding, Role, Speaker
from schemas.wire import JobEvent, LogShard

__all__ = [
    "Alternative",
    "CatalogError",
    "CollateralGroup",
    "Diagnosis",
    "Evidence",
    "Finding",
    "FirstfaultError",
    "InvalidMessage",
    "JobEvent",
    "LogShard",
    "PermanentError",
    "RetryableError",
    "Role",
    "RootCause",
    "Speaker",
    "TimelineEntry",
    "TransportError",
    "UsageError",
]
