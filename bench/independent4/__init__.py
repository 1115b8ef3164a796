"""bench/independent4: a fourth blind generator of labelled failed distributed jobs (stdlib only).

Written from the formats' upstream sources (cited beside each template in texts.py and render.py), without
reading firstfault's catalog, correlator, scanners, sources, naming, simulator or the other generators' code.
See README.md.
"""
