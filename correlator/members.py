"""The catalog's and the findings' enum members as plain module names, for the steps that test every event. Pure.

Python 3.11's ``EnumType`` defines ``__getattr__`` (3.12 dropped it), so reading ``Role.COLLATERAL`` goes through
``slot_tp_getattr_hook``: type's ``__getattribute__`` looked up and called through a bound wrapper, about ten times
a global name's cost. Correlation tested every rank's events against members so (``ev.role is Role.COLLATERAL``):
6.3% of its instructions at 8,192 ranks (callgrind, the hook removed for the measurement; issue 23: speed per rank).
A module name is one specialised LOAD_GLOBAL; each is the member itself, so ``is`` and ``==`` read the same.
"""

from __future__ import annotations

from catalog.model import Category, Implicates, Scope, Severity
from schemas.findings import Role

ROLE_INITIATING = Role.INITIATING
ROLE_COLLATERAL = Role.COLLATERAL
ROLE_EITHER = Role.EITHER
ROLE_CONTEXT = Role.CONTEXT
IMPLICATES_SELF = Implicates.SELF
IMPLICATES_PEER = Implicates.PEER
IMPLICATES_NAMED = Implicates.NAMED
IMPLICATES_MAIN = Implicates.MAIN
IMPLICATES_NONE = Implicates.NONE
CATEGORY_COMMUNICATION = Category.COMMUNICATION
CATEGORY_GPU = Category.GPU
CATEGORY_CUDA = Category.CUDA
CATEGORY_MEMORY = Category.MEMORY
CATEGORY_HOST = Category.HOST
CATEGORY_STORAGE = Category.STORAGE
CATEGORY_SCHEDULER = Category.SCHEDULER
CATEGORY_CONFIGURATION = Category.CONFIGURATION
CATEGORY_LAUNCHER = Category.LAUNCHER
CATEGORY_FRAMEWORK = Category.FRAMEWORK
CATEGORY_NUMERICS = Category.NUMERICS
CATEGORY_SERVING = Category.SERVING
CATEGORY_HANG = Category.HANG
CATEGORY_OTHER = Category.OTHER
SCOPE_RANK = Scope.RANK
SCOPE_NODE = Scope.NODE
SCOPE_JOB = Scope.JOB
SEVERITY_CRITICAL = Severity.CRITICAL
SEVERITY_ERROR = Severity.ERROR
SEVERITY_WARNING = Severity.WARNING
SEVERITY_INFO = Severity.INFO
