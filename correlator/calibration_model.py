"""Calibrated confidence: the fitted logistic model. Written by `python -m bench.calibrate --fit`;
do not edit by hand (correlator/calibration.py evaluates it, then applies its caps)."""

INTERCEPT = -0.0523
COEFFICIENTS = {
    "strength": 1.8346,
    "thin": -0.2348,
    "margin": 1.1055,
    "cause": 1.2433,
    "named": 0.7149,
    "sequence": 0.9255,
    "own_line": 0.7717,
    "unique": 0.0000,
    "exit_code": 0.0000,
    "others_only": -0.4179,
    "exit_only": -2.1946,
    "generic": -1.4997,
    "rival_cause": 0.0000,
    "rival_same": 0.0000,
    "crowd": -1.3247,
    "job_wide": -1.2737,
    "host_only": 0.0104,
    "unplaced": -1.5146,
    "assumed_rank": -1.7509,
    "collateral_only": 0.9580,
    "unknown_suspect": 0.6592,
    "no_suspect": 2.6567,
}
FIT = {
    "corpus_tuning": 34,
    "corpus_weight": 16.0,
    "date": "2026-12-03",
    "l2": 2.0,
    "log_loss": 0.3636,
    "per_kind": 24,
    "rows": 367,
    "seed": 2026,
    "simulated": 336,
    "wrong_weight": 3.0,
}
