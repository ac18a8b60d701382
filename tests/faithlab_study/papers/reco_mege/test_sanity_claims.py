"""ReCo/MeGe's R4 (Figs. 2–3) as a study check over independent units: the pooled ρ of each (distance × check) with
its shuffled-pairing chance level (a display), the ρ of each independent unit (a path, a noise series), the random
paths, and claim_sanity_checks reaching every verdict on synthetic unit frames."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

import faithlab as fl
import faithlab_study as fs
from faithlab.metrics.statistics import spearman
from faithlab_study.papers.reco_mege.claims import sanity as R

REP, W, PART, NOT, UNTESTABLE, INCONCLUSIVE = fs.verdicts.VERDICTS  # W: reproduced, weaker


def distances(relation: dict[str, str], *, n: int = 40, seed: int = 0, x: str = "step") -> pd.DataFrame:
    """A tidy distance frame (x, distance, value) for the six kinds: "strong" grows with x (ρ ≈ 1), "moderate"
    grows with a lot of noise (ρ ≈ 0.6, far above chance but below 0.9), "none" is noise (ρ at chance), "down"
    falls with x, "constant" never changes (ρ undefined)."""
    rng = np.random.default_rng(seed)
    steps = np.arange(n, dtype=float)
    shapes = {"strong": lambda: steps + 0.01 * rng.normal(size=n),
              "moderate": lambda: steps + 12.0 * rng.normal(size=n),
              "none": lambda: rng.normal(size=n),
              "down": lambda: -steps + 0.01 * rng.normal(size=n),
              "constant": lambda: np.ones(n)}
    return pd.concat([pd.DataFrame({x: steps, "distance": kind, "value": shapes[how]()})
                      for kind, how in relation.items()], ignore_index=True)


def six(how: str, **others: str) -> dict[str, str]:
    return {kind: others.get(kind, how) for kind in R.KINDS}


def test_monotonicity_chance_range_is_the_shuffled_spearman():
    frame = distances(six("strong", dice="moderate", ssim="none", l1="down"), n=40)
    out = R.monotonicity(frame, x="step", n_draws=500, seed=3).set_index("distance")
    width = 1.96 / math.sqrt(39)                               # ρ at chance: sd ≈ 1/√(n − 1)
    assert (out["null low"] < 0).all() and (out["null high"] > 0).all()
    assert np.allclose(out["null high"], width, atol=0.08) and np.allclose(out["null low"], -width, atol=0.08)
    assert out.loc["wasserstein", "above chance"] and not out.loc["wasserstein", "at chance"]
    assert out.loc["dice", "above chance"] and not out.loc["dice", "passes"]   # real but weaker than 0.9
    assert out.loc["ssim", "at chance"] and not out.loc["ssim", "above chance"]
    assert not out.loc["l1", "at chance"] and not out.loc["l1", "above chance"]  # significantly negative
    assert (out["null draws"] == 500).all() and (out["null level"] == 0.95).all()
    # the batched draws are the Spearman ρ of the same permutations, one at a time
    g = frame[frame.distance == "ssim"]
    order = R._permutations(40, 500, 3)
    ref = spearman(torch.tensor(g["step"].to_numpy()).expand(500, 40), torch.tensor(g["value"].to_numpy())[order])
    null = R._shuffled_rho(g["step"], g["value"], n_draws=500, level=0.95, seed=3)
    assert torch.allclose(torch.tensor(null.draws, dtype=torch.float64), ref)
    assert out.loc["ssim", "null high"] == pytest.approx(null.high)


def test_monotonicity_without_a_chance_range():
    frame = distances({"a": "strong", "b": "constant"}, n=2)
    out = R.monotonicity(frame, x="step").set_index("distance")
    assert out.loc["a", "spearman"] == pytest.approx(1.0) and out.loc["a", "passes"]
    assert out.loc["a", "at chance"] and out.loc["a", "null draws"] == 0 and math.isnan(out.loc["a", "null high"])
    constant = R.monotonicity(distances({"b": "constant"}, n=30), x="step")
    assert constant["at chance"].all() and constant["null draws"].eq(0).all()
    with pytest.raises(ValueError, match="n_draws"):
        R.monotonicity(frame, x="step", n_draws=5)
    with pytest.raises(ValueError, match="level"):
        R.monotonicity(frame, x="step", level=0.2)


def unit_rhos(fig2: dict, fig3: dict, *, units: int = 30, sd: float = 0.02, seed: int = 0) -> pd.DataFrame:
    """unit_spearman rows of both checks: per distance, ``units`` independent units whose ρ scatter around the
    given mean with SD ``sd`` (or a distance's own ``(mean, sd)``), clipped to [−1, 1]."""
    rng = np.random.default_rng(seed)
    cells = [(check, kind, *(v if isinstance(v, tuple) else (v, sd)))
             for check, spec in (("Fig. 2 (moving point)", fig2), ("Fig. 3 (noise)", fig3)) for kind, v in spec.items()]
    return pd.concat([pd.DataFrame({"check": check, "distance": kind, "unit": np.arange(units),
                                    "spearman": np.clip(mean + s * rng.normal(size=units), -1, 1), "n": 10})
                      for check, kind, mean, s in cells], ignore_index=True)


def six_rho(value: float, **others: float) -> dict[str, float]:
    return {kind: others.get(kind, value) for kind in R.KINDS}


@pytest.mark.parametrize("fig2, fig3, units, expected, held", [
    (six_rho(0.98), six_rho(0.99), 30, REP, 12),                        # every cell well above 0.9
    (six_rho(0.98, l2=0.8), six_rho(0.99), 30, W, 11),                  # one shown positive, tightly below 0.9
    (six_rho(0.98, l2=0.0), six_rho(0.99), 30, NOT, 11),                # one unrelated to the displacement
    (six_rho(0.98, ssim=-0.5), six_rho(0.99), 30, NOT, 11),             # one falls with the displacement
    (six_rho(0.98, dice=(0.4, 0.8)), six_rho(0.99), 5, INCONCLUSIVE, 11),   # its units disagree: reaches 0 and 0.9
])
def test_claim_r4_gives_every_verdict(fig2, fig3, units, expected, held):
    claim = R.claim_sanity_checks(unit_rhos(fig2, fig3, units=units))
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert int((claim.table["outcome"] == "holds").sum()) == held and len(claim.table) == 12
    assert claim.rule_id == "R4" and claim.kind == "study check" and not claim.trained and claim.units == units
    assert "0.9" in claim.rule and "t on units" in claim.rule and "independent" in claim.premise
    assert set(claim.table["interval"] if "interval" in claim.table else ["t on units"]) == {"t on units"}


def test_unit_spearman_is_the_rho_of_each_unit():
    steps = np.arange(10.0)
    frame = pd.concat([pd.DataFrame({"step": steps, "unit": u, "distance": "l1", "value": v})
                       for u, v in ((0, steps), (1, -steps), (2, np.ones(10)))], ignore_index=True)
    out = R.unit_spearman(frame, x="step", unit="unit").set_index("unit")
    assert out.loc[0, "spearman"] == pytest.approx(1.0) and out.loc[1, "spearman"] == pytest.approx(-1.0)
    assert math.isnan(out.loc[2, "spearman"]) and (out["n"] == 10).all()
    with pytest.raises(ValueError, match="unit"):
        R.unit_spearman(frame, x="step", unit="path")


def test_random_paths_move_a_point_from_the_left_to_the_right():
    maps = R.random_paths(4, size=32, steps=5, radius=2.0, generator=0)
    assert maps.shape == (4, 5, 32, 32) and maps.dtype == torch.float64
    peak = maps.flatten(2).argmax(-1)
    cols, rows = peak % 32, peak // 32
    assert (cols[:, 0] == 4).all() and (cols[:, -1] == 27).all() and (torch.diff(cols, dim=1) > 0).all()
    assert ((rows >= 4) & (rows <= 27)).all() and not (rows[:, 0] == rows[0, 0]).all()   # drawn rows
    assert torch.equal(maps, R.random_paths(4, size=32, steps=5, radius=2.0, generator=0))
    with pytest.raises(ValueError, match="steps"):
        R.random_paths(2, steps=1, generator=0)


def test_claim_r4_bad_arguments():
    frame = unit_rhos(six_rho(0.98), six_rho(0.99))
    with pytest.raises(ValueError, match="spearman"):
        R.claim_sanity_checks(frame.drop(columns="spearman"))
    with pytest.raises(TypeError, match="units"):
        R.claim_sanity_checks(frame.to_dict())
    one = R.claim_sanity_checks(frame[frame.unit == 0].assign(unit=0))
    assert one.verdict == INCONCLUSIVE                                  # a single unit per cell: no interval
