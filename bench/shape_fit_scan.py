"""How well each draft cost c explains a pool's step-time window, after a simulator run of `specgate`: plain
least-squares fits (no ridge, no shape search) of the window the controller holds at the end of the run, knee 0,
over a grid of c, with the drafter's fixed cost t4 free or held at 0 (as the controller's fit holds it while nearly
every step drafts), and the window's residuals against the simulator's true step time by batch range. Written to
explain where the shape search settles on gpu-published (docs/controller.md, session 32).

    python bench/shape_fit_scan.py --scenario gpu-published --seed 1
"""

from __future__ import annotations

import argparse
import itertools

import numpy as np
import numpy.typing as npt
from sim_per_step import scenario_at
from specgate.offline import simulator as sim

Floats = npt.NDArray[np.float64]


def _fit(x: Floats, y: Floats, w: Floats, nonnegative: bool) -> tuple[Floats, float]:
    """Weighted least squares of y on the columns of x (all coefficients >= 0 when `nonnegative`, by enumerating the
    columns held at 0), and its relative RMS error."""
    sw = np.sqrt(w)
    a, b = x * sw[:, None], y * sw
    best: tuple[Floats, float] | None = None
    for free in itertools.product((True, False), repeat=x.shape[1]) if nonnegative else [(True,) * x.shape[1]]:
        cols = [i for i, keep in enumerate(free) if keep]
        theta = np.zeros(x.shape[1])
        if cols:
            theta[cols] = np.linalg.lstsq(a[:, cols], b, rcond=None)[0]
        if nonnegative and (theta < 0).any():
            continue
        miss = float(((a @ theta - b) ** 2).sum())
        if best is None or miss < best[1]:
            best = (theta, miss)
    assert best is not None
    return best[0], float(np.sqrt(best[1] / (b**2).sum()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default="gpu-published")
    ap.add_argument(
        "--seed", type=int, default=1, help="as bench/sim_per_step.py numbers them (scenario seed + 1000 x)"
    )
    args = ap.parse_args()
    scenario = scenario_at(args.scenario, args.seed)
    policy = sim.make_policy("specgate", scenario)
    result = sim.run(scenario, policy)
    assert isinstance(policy, sim.AdaptiveSchedule)
    model = policy.ctl.cost_model("sim")
    data = model._samples()
    b, kbar, kmax, y, share = data.T
    w = model._decay ** (len(data) - 1 - np.arange(len(data))) / y**2  # the fit's own weights
    print(
        f"{args.scenario} seed {args.seed}: mean TPOT {result.summary()['mean_tpot_ms']:.3f} ms; window of {len(data)}"
    )
    print(f"the controller's shape: c = {model.draft_cost}, knee = {model.knee}")
    for c in (0.2, 0.3, 0.33, 0.4, 0.5, 0.6, 0.75, 1.0):
        tokens = b * (1 + c * kbar)
        free, e_free = _fit(np.column_stack([np.ones(len(y)), tokens, kmax, share]), y, w, nonnegative=False)
        held, e_held = _fit(np.column_stack([np.ones(len(y)), tokens, kmax]), y, w, nonnegative=True)
        print(
            f"c = {c:4}: error {e_free:.4f} with t4 free (t0 {free[0] * 1e3:.2f} ms, t4 {free[3] * 1e3:.2f} ms), "
            f"{e_held:.4f} with t4 held at 0 (t3 {held[2] * 1e3:.3f} ms per draft position)"
        )
    step = sim.STEP_PROFILES.get(scenario.profile)
    if step is not None:
        truth = np.array([step(bi, ki, mi) for bi, ki, mi in zip(b, kbar, kmax, strict=True)])
        miss = y / truth - 1
        for lo, hi in ((1, 5), (5, 20), (20, 60), (60, 150), (150, 1e9)):
            at = (b >= lo) & (b < hi)
            if at.any():
                print(
                    f"batch {lo:g}-{hi:g}: {int(at.sum())} samples, mean kbar {kbar[at].mean():.2f}, "
                    f"{miss[at].mean():+.2%} against the true step time at their mean batch"
                )


if __name__ == "__main__":
    main()
