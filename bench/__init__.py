"""Benchmarks for firstfault: a realistic multi-rank log generator and matcher/end-to-end throughput runs."""
