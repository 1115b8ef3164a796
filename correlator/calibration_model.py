"""Calibrated confidence: the fitted logistic model. Written by `python -m bench.calibrate --fit`;
do not edit by hand (correlator/calibration.py evaluates it, then applies its caps)."""

INTERCEPT = -0.5425
COEFFICIENTS = {
    "strength": 2.9140,
    "thin": 0.0000,
    "margin": 1.5260,
    "cause": 0.4484,
    "named": 0.2503,
    "sequence": 1.6053,
    "own_line": 0.0000,
    "unique": 0.2492,
    "exit_code": 0.0000,
    "others_only": 0.0000,
    "exit_only": -1.6733,
    "generic": -2.2677,
    "rival_cause": 0.0000,
    "rival_same": -0.1299,
    "crowd": -1.8474,
    "job_wide": 0.7628,
    "host_only": -0.1116,
    "unplaced": -2.5655,
    "assumed_rank": -0.7185,
    "collateral_only": 1.2007,
    "unknown_suspect": 0.1172,
    "no_suspect": -0.0287,
}
FIT = {
    "corpus_tuning": 34,
    "corpus_weight": 16.0,
    "date": "2026-12-03",
    "l2": 2.0,
    "log_loss": 0.2939,
    "per_kind": 24,
    "rows": 368,
    "seed": 2026,
    "simulated": 336,
    "wrong_weight": 3.0,
}
