"""Calibrated confidence: the fitted logistic model. Written by `python -m bench.calibrate --fit`;
do not edit by hand (correlator/calibration.py evaluates it, then applies its caps)."""

INTERCEPT = 1.2160
COEFFICIENTS = {
    "strength": 0.4682,
    "thin": -1.3125,
    "margin": 0.3547,
    "cause": 1.5762,
    "named": 0.3497,
    "sequence": 0.4494,
    "own_line": 0.0000,
    "unique": 0.5246,
    "exit_code": 0.3298,
    "others_only": 0.0000,
    "exit_only": -1.4128,
    "generic": 0.0000,
    "rival_cause": 0.0000,
    "crowd": -0.1070,
    "job_wide": -0.4303,
    "host_only": -0.8822,
    "unplaced": -2.1084,
    "assumed_rank": -3.0949,
    "collateral_only": 1.6364,
    "unknown_suspect": -0.4920,
    "no_suspect": 1.3787,
}
FIT = {
    "corpus_tuning": 34,
    "corpus_weight": 16.0,
    "date": "2026-12-03",
    "l2": 2.0,
    "log_loss": 0.3119,
    "per_kind": 24,
    "rows": 366,
    "seed": 2026,
    "simulated": 336,
}
