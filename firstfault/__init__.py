"""firstfault: which rank or node failed first, why, what to do, and how to verify the fix."""

__version__ = "0.1.0"
