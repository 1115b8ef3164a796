"""The scan engine: a matcher built from the catalog, run over sources in one process or a forked pool, and the
correlator over the results. Shared by `firstfault diagnose`, the service's builders and the benches."""
