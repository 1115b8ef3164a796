"""firstfault: which rank or node failed first, why, what to do, and how to verify the fix.

This package is the composition root: the CLI and the wiring of the running service. Nothing outside it (and
tests) imports it; what other packages share lives below it (config, runtime, scan, simulate)."""
