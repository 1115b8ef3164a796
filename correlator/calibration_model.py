"""Calibrated confidence: the fitted logistic model. Written by `python -m bench.calibrate --fit`;
do not edit by hand (correlator/calibration.py evaluates it, then applies its caps)."""

INTERCEPT = -0.5396
COEFFICIENTS = {
    "strength": 2.8688,
    "thin": 0.0000,
    "margin": 1.6966,
    "cause": 0.5029,
    "named": 0.2008,
    "sequence": 1.5498,
    "own_line": 0.0000,
    "unique": 0.0000,
    "exit_code": 0.0000,
    "others_only": 0.0000,
    "exit_only": -1.7428,
    "generic": -2.3376,
    "rival_cause": 0.0000,
    "rival_same": -0.1840,
    "crowd": -1.8532,
    "job_wide": 0.9389,
    "host_only": -0.1955,
    "unplaced": -2.5874,
    "assumed_rank": -0.7575,
    "collateral_only": 1.1517,
    "unknown_suspect": 0.1722,
    "no_suspect": -0.1361,
}
FIT = {
    "corpus_tuning": 34,
    "corpus_weight": 16.0,
    "date": "2026-12-03",
    "l2": 2.0,
    "log_loss": 0.2846,
    "per_kind": 24,
    "rows": 368,
    "seed": 2026,
    "simulated": 336,
    "wrong_weight": 3.0,
}
