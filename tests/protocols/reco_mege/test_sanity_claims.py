"""ReCo/MeGe's R4 (Figs. 2–3) as a claim function: every (distance × check) ρ carries its shuffled-pairing chance
level, and claim_sanity_checks gives every verdict on synthetic distance frames with a known relation to x."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

import faithlab as fl
from faithlab.metrics.statistics import spearman
from faithlab.protocols import reco_sanity as R

REP, PART, NOT, UNTESTABLE, INCONCLUSIVE = fl.verdicts.VERDICTS
CONTROL = "control reading"


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


def checks(fig2: dict[str, str], fig3: dict[str, str], control: dict[str, str] | None = None,
           n: int = 40) -> pd.DataFrame:
    frames = [R.monotonicity(distances(fig2, n=n, seed=1), x="step").assign(check="Fig. 2 (moving point)"),
              R.monotonicity(distances(fig3, n=n, seed=2), x="step").assign(check="Fig. 3 (noise)")]
    if control is not None:
        frames.append(R.monotonicity(distances(control, n=n, seed=3), x="step").assign(check=CONTROL))
    return pd.concat(frames, ignore_index=True)


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


@pytest.mark.parametrize("fig2, fig3, expected, held", [
    (six("strong"), six("strong"), REP, 12),
    # Fig. 2 as we find it on the moving point: only Wasserstein passes there; every distance passes the noise test
    (six("moderate", wasserstein="strong"), six("strong"), PART, 7),
    # every testable setting holds, but one ρ is at chance: "all six" is not shown
    (six("strong", ssim="none"), six("strong"), PART, 11),
    (six("moderate"), six("down", l2="strong"), NOT, 1),
    (six("none"), six("constant"), UNTESTABLE, 0),
])
def test_claim_r4_gives_every_verdict(fig2, fig3, expected, held):
    claim = R.claim_sanity_checks(checks(fig2, fig3))
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert int((claim.table["status"] == "holds").sum()) == held
    assert claim.claim.startswith("R4: all six distances pass both sanity checks")
    assert "chance range" in claim.premise and "shuffled" in claim.premise and "≥ 0.9" in claim.rule
    assert claim.decision and "reproduced when" not in claim.rule and claim.kind == "paper"
    if expected == UNTESTABLE:
        assert "within its shuffled-pairing chance range" in claim.verdict.why
    if held == 11:
        assert "SSIM in Fig. 2 (moving point)" in claim.premise and "not shown" in claim.verdict.why


def test_claim_r4_reports_the_control_without_deciding_on_it():
    good = R.claim_sanity_checks(checks(six("strong"), six("strong"), control=six("none")), control=CONTROL)
    bad = R.claim_sanity_checks(checks(six("strong"), six("strong"), control=six("down")), control=[CONTROL])
    assert good.verdict == bad.verdict == REP
    table = bad.table.set_index(["check", "distance"])
    assert (table.loc[CONTROL, "status"] == "control").all() and not table.loc[CONTROL, "in verdict"].any()
    assert CONTROL in bad.our_value and CONTROL in bad.rule
    # the same control rows, decided, would break the claim
    assert R.claim_sanity_checks(checks(six("strong"), six("strong"), control=six("down"))).verdict == PART


def test_claim_r4_bad_arguments():
    frame = checks(six("strong"), six("strong"))
    with pytest.raises(ValueError, match="control"):
        R.claim_sanity_checks(frame, control=["Fig. 4"])
    with pytest.raises(ValueError, match="null low"):
        R.claim_sanity_checks(frame.drop(columns="null low"))
    with pytest.raises(ValueError, match="not a control"):
        R.claim_sanity_checks(frame, control=["Fig. 2 (moving point)", "Fig. 3 (noise)"])
    with pytest.raises(TypeError, match="checks"):
        R.claim_sanity_checks(frame.to_dict())
