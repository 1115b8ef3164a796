"""A small weighted logistic regression, in pure Python (the fit has ~20 features and ~1,000 rows: no numpy).

Newton's method on the L2-penalised log-likelihood; features listed as ``nonnegative`` are held at 0 when their
unconstrained coefficient comes out negative (an active-set refit), so that more margin, more evidence or a cause
of its own can never lower the confidence; ``nonpositive`` ones likewise (a catch-all signature, a rival with a
cause of its own, nothing of its own can never raise it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

Row = tuple[dict[str, float], bool, float]  # features, right?, weight


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    """a x = b by Gaussian elimination with partial pivoting (a is small and positive definite)."""
    n = len(b)
    m = [[*row, b[i]] for i, row in enumerate(a)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(m[r][col]))
        m[col], m[pivot] = m[pivot], m[col]
        if abs(m[col][col]) < 1e-12:
            continue
        for r in range(col + 1, n):
            factor = m[r][col] / m[col][col]
            if factor:
                for c in range(col, n + 1):
                    m[r][c] -= factor * m[col][c]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        if abs(m[r][r]) < 1e-12:
            continue
        x[r] = (m[r][n] - sum(m[r][c] * x[c] for c in range(r + 1, n))) / m[r][r]
    return x


def _sigmoid(z: float) -> float:
    return 1 / (1 + math.exp(-max(-30.0, min(30.0, z))))


def _newton(xs: list[list[float]], ys: list[float], ws: list[float], l2: float, iterations: int) -> list[float]:
    """Coefficients (intercept first, unpenalised) maximising the penalised weighted log-likelihood."""
    k = len(xs[0])
    beta = [0.0] * k
    for _ in range(iterations):
        grad = [0.0] * k
        hess = [[0.0] * k for _ in range(k)]
        for x, y, w in zip(xs, ys, ws, strict=True):
            p = _sigmoid(sum(b * v for b, v in zip(beta, x, strict=True)))
            g, h = w * (y - p), w * p * (1 - p)
            for i in range(k):
                if x[i]:
                    grad[i] += g * x[i]
                    hi = hess[i]
                    for j in range(k):
                        if x[j]:
                            hi[j] += h * x[i] * x[j]
        for i in range(1, k):
            grad[i] -= l2 * beta[i]
            hess[i][i] += l2
        hess[0][0] += 1e-6
        step = _solve(hess, grad)
        beta = [b + s for b, s in zip(beta, step, strict=True)]
        if max(abs(s) for s in step) < 1e-7:
            break
    return beta


def fit(rows: Sequence[Row], names: Sequence[str], nonnegative: Sequence[str] = (),
        nonpositive: Sequence[str] = (), l2: float = 1.0, iterations: int = 50) -> tuple[float, dict[str, float]]:
    """(intercept, coefficient by feature name) of P(right | features), each sign-constrained feature held at 0
    when its fitted coefficient has the wrong sign."""
    active = list(names)
    while True:
        xs = [[1.0, *(f.get(n, 0.0) for n in active)] for f, _, _ in rows]
        ys = [1.0 if right else 0.0 for _, right, _ in rows]
        ws = [w for _, _, w in rows]
        beta = _newton(xs, ys, ws, l2, iterations)
        coef = dict(zip(active, beta[1:], strict=True))
        wrong_sign = [n for n in active if (n in nonnegative and coef[n] < 0) or (n in nonpositive and coef[n] > 0)]
        if not wrong_sign:
            return beta[0], {n: coef.get(n, 0.0) for n in names}
        active = [n for n in active if n not in wrong_sign]


def log_loss(rows: Sequence[Row], predict: dict[int, float]) -> float:
    """Weighted mean log loss of predictions (by row index)."""
    total = weight = 0.0
    for i, (_, right, w) in enumerate(rows):
        p = min(1 - 1e-6, max(1e-6, predict[i]))
        total -= w * (math.log(p) if right else math.log(1 - p))
        weight += w
    return total / weight if weight else 0.0
