"""Calibrated confidence: the fitted logistic model. Written by `python -m bench.calibrate --fit`;
do not edit by hand (correlator/calibration.py evaluates it, then applies its caps)."""

INTERCEPT = 1.1848
COEFFICIENTS = {
    "strength": 1.3082,
    "thin": -0.4619,
    "margin": 0.5363,
    "cause": 2.1319,
    "named": 0.2843,
    "sequence": 0.3274,
    "own_line": 0.2166,
    "unique": 0.1055,
    "exit_code": 0.0000,
    "others_only": -0.6316,
    "exit_only": -1.6857,
    "generic": -1.0946,
    "rival_cause": 0.0000,
    "crowd": -0.3695,
    "job_wide": -1.4428,
    "host_only": -0.9975,
    "unplaced": -0.3804,
    "assumed_rank": -1.7986,
    "collateral_only": 1.8781,
    "unknown_suspect": -0.3484,
    "no_suspect": 1.7599,
}
FIT = {
    "corpus_tuning": 34,
    "corpus_weight": 16.0,
    "date": "2026-12-03",
    "l2": 2.0,
    "log_loss": 0.2611,
    "per_kind": 24,
    "rows": 367,
    "seed": 2026,
    "simulated": 336,
}
