"""bench/logistic.py, the pure-Python fit behind calibrated confidence: it finds the effects in the data, and a
feature whose sign is fixed by what it means never gets the other sign, whatever the data say."""

from __future__ import annotations

import math
import random

from bench.logistic import fit


def _rows(n: int, effects: dict[str, float], intercept: float, seed: int = 5) -> list[tuple[dict[str, float], bool,
                                                                                            float]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        f = {name: float(rng.random() < 0.5) for name in effects}
        z = intercept + sum(w * f[name] for name, w in effects.items())
        out.append((f, rng.random() < 1 / (1 + math.exp(-z)), 1.0))
    return out


def test_the_fit_recovers_the_effects_of_the_data() -> None:
    effects = {"cause": 2.0, "exit_only": -1.5, "noise": 0.0}
    intercept, coef = fit(_rows(3000, effects, 0.2), list(effects), l2=0.1)
    assert abs(coef["cause"] - 2.0) < 0.35 and abs(coef["exit_only"] + 1.5) < 0.35 and abs(coef["noise"]) < 0.3
    assert abs(intercept - 0.2) < 0.3


def test_a_sign_fixed_feature_is_held_at_zero_when_the_data_say_otherwise() -> None:
    effects = {"margin": -1.0, "generic": 1.0, "cause": 1.5}
    _, coef = fit(_rows(2000, effects, 0.0), list(effects), nonnegative=["margin"], nonpositive=["generic"], l2=0.1)
    assert coef["margin"] == 0.0 and coef["generic"] == 0.0
    assert coef["cause"] > 1.0
