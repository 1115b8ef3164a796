"""bench/independent6: a sixth blind generator of labelled failed distributed jobs (stdlib only).

Written from the formats' upstream sources (cited beside each template), without reading firstfault's catalog,
correlator, scanners, sources, naming, simulator or the other generators' code. See README.md.
"""
