"""A time budget (issue 52, item 3): :mod:`faithlab.evaluation.budget` chooses the Monte-Carlo counts that make the
estimated run fit, ``faithlab evaluate --budget`` and ``fl.evaluate(budget=)`` run with them."""

from __future__ import annotations

import html
import math

import pandas as pd
import pytest
import torch
from oracles import Sleepy, image_folder, small_cnn

import faithlab as fl
from faithlab import cli
from faithlab.evaluation import budget

PAPER = {"n_samples": 50, "n_subsets": 200, "n_neighbours": 50, "n_perturb_samples": 50}


@pytest.mark.parametrize("text, seconds", [("10m", 600.0), ("90s", 90.0), ("1.5h", 5400.0), ("300", 300.0),
                                           (45, 45.0), (2.5, 2.5), (" 2 min ", 120.0)])
def test_a_budget_is_read_in_seconds_minutes_or_hours(text, seconds):
    assert budget.parse(text) == seconds


@pytest.mark.parametrize("bad, error", [("10 minutes", ValueError), ("fast", ValueError), (0, ValueError),
                                        (-5, ValueError), ("", ValueError), (math.inf, ValueError),
                                        (True, TypeError), (None, TypeError)])
def test_a_bad_budget_names_the_argument(bad, error):
    with pytest.raises(error, match="budget"):
        budget.parse(bad)


def _linear(fixed: float, per_draw: dict[str, float]):
    """Seconds per group of a run whose cost is ``fixed`` plus ``per_draw[knob]`` per draw of each knob, split
    into the groups :data:`budget.KNOBS` names (the sanity check's RFid too, as the CLI reports it)."""
    def seconds_of(counts):
        return {"clean": fixed, "rfid": per_draw["n_samples"] * counts["n_samples"] / 2,
                "sanity: rfid": per_draw["n_samples"] * counts["n_samples"] / 2,
                "mu_fidelity": per_draw["n_subsets"] * counts["n_subsets"],
                "s_avg": per_draw["n_neighbours"] * counts["n_neighbours"],
                "infidelity": per_draw["n_perturb_samples"] * counts["n_perturb_samples"]}
    return seconds_of


def test_the_counts_minimise_the_summed_relative_variance_within_the_budget():
    per = {"n_samples": 0.4, "n_subsets": 0.02, "n_neighbours": 0.2, "n_perturb_samples": 0.05}
    full = 10 + sum(per[k] * PAPER[k] for k in PAPER)  # 10 + 20 + 4 + 10 + 2.5 = 46.5 s
    got = budget.allocate(_linear(10, per), 25, PAPER)
    assert got.full == pytest.approx(full) and got.fixed == pytest.approx(10)
    assert got.per_draw == pytest.approx(per)
    assert got.fits and 25 - max(per.values()) <= got.seconds <= 25  # as much as fits, to within one draw
    # the optimum of Σ paper/v under Σ b·v = 15 s: v = λ √(paper / b), every count inside its bounds here
    # (continuous: λ = 15 / Σ √(paper·b)); in whole draws, counts = ⌊λ' √(paper / b)⌋ for one λ' ≥ λ that
    # spends the draws' rounding, so some λ' lies in every count's interval [c / s, (c + 1) / s)
    lam = 15 / sum(math.sqrt(PAPER[k] * per[k]) for k in PAPER)
    scale = {k: math.sqrt(PAPER[k] / per[k]) for k in PAPER}
    low = max(got.counts[k] / scale[k] for k in PAPER)
    high = min((got.counts[k] + 1) / scale[k] for k in PAPER)
    assert lam <= low < high <= lam * 1.05, got.counts
    # a dear draw is cut more than a cheap one, relative to the paper's count
    assert got.counts["n_samples"] / 50 < got.counts["n_neighbours"] / 50 < got.counts["n_subsets"] / 200
    assert got.changed == got.counts


def test_a_cheap_count_stays_at_the_papers_and_a_given_one_is_kept():
    per = {"n_samples": 0.4, "n_subsets": 1e-5, "n_neighbours": 0.2, "n_perturb_samples": 0.05}
    got = budget.allocate(_linear(10, per), 30, PAPER)
    assert got.counts["n_subsets"] == 200  # clipped at the paper's count: more would buy nothing the paper asks
    kept = budget.allocate(_linear(10, per), 18, {**PAPER, "n_samples": 7}, given=["n_samples"])
    assert kept.counts["n_samples"] == 7 and kept.counts["n_neighbours"] < 50 and kept.fits


def test_a_budget_the_paper_fits_changes_nothing_and_one_too_small_says_what_would_fit():
    per = {"n_samples": 0.4, "n_subsets": 0.01, "n_neighbours": 0.2, "n_perturb_samples": 0.05}
    roomy = budget.allocate(_linear(10, per), 100, PAPER)
    assert roomy.counts == PAPER and roomy.changed == {} and "nothing cut" in budget.describe(roomy, 4)
    tight = budget.allocate(_linear(10, per), 11, PAPER)  # the floors alone take 10 + 2 + 0.2 + 1 + 0.5 = 13.7 s
    assert not tight.fits and tight.minimum == pytest.approx(13.7)
    assert tight.counts == {k.option: k.floor for k in budget.KNOBS}
    assert "3 image(s) would fit" in budget.describe(tight, 4)  # 13.7 s / 4 images = 3.4 s each: 3 in 11 s


def test_the_cli_fits_the_run_in_its_budget_and_reports_the_standard_errors(tmp_path, monkeypatch, capsys):
    """A model whose 10 ms per input dominate: μF at the paper's 200 subsets would take 8 s on 4 images; a budget of
    7 s (minus what loading and timing took, and the report's writing, a few seconds) cuts the subsets, the estimate
    says so and the run keeps to it."""
    model = Sleepy(0.010, 12)
    monkeypatch.setattr(fl.models, "load", lambda spec, weights=None: model)
    out = tmp_path / "out"
    args = ["evaluate", "--model", "sleepy", "--random-weights", "--images", str(image_folder(tmp_path / "i", 12)),
            "--out", str(out), "--explainers", "saliency", "--maps", "0", "--no-sanity", "--yes",
            "--metrics", "mu_fidelity", "--batch-size", "8", "--budget", "7s"]
    assert cli.main(args) == 0
    printed = capsys.readouterr().out
    subsets = int(printed.split("n_subsets=")[1].split(" ")[0])
    assert 20 <= subsets < 200 and "Monte-Carlo standard error" in printed
    table = pd.read_csv(out / "estimate.csv").set_index("group")
    assert table.loc["mu_fidelity", "measured model inputs"] == 4 * subsets
    # the run's work (the report's writing aside: a few seconds of imports and plots, noise at this tiny size)
    estimated, measured = (table.loc["total", c] - table.loc["report", c] for c in ("estimated seconds",
                                                                                    "measured seconds"))
    assert table.loc["total", "estimated seconds"] <= 7 and 1 / 1.5 < estimated / measured < 1.5, table
    page = html.unescape((out / "index.html").read_text(encoding="utf-8"))
    assert f"n_subsets={subsets} (random subsets of μF; the paper's 200), chosen to fit --budget 7s" in page
    assert pd.read_csv(out / "report.csv")["mc_se"].notna().all()  # μF: every score has its error


def test_the_cli_refuses_a_budget_it_cannot_meet_naming_the_flag(tmp_path, monkeypatch, capsys):
    model = Sleepy(0.010, 12)
    monkeypatch.setattr(fl.models, "load", lambda spec, weights=None: model)
    args = ["evaluate", "--model", "sleepy", "--random-weights", "--images", str(image_folder(tmp_path / "i", 12)),
            "--out", str(tmp_path / "out"), "--explainers", "saliency", "--maps", "0", "--no-sanity", "--yes",
            "--metrics", "mu_fidelity", "--batch-size", "8", "--budget", "0.1s"]
    assert cli.main(args) == 2
    error = capsys.readouterr().err
    assert "--budget" in error and "would fit" in error and "--n-images" in error
    assert not (tmp_path / "out").exists()


def test_fl_evaluate_takes_a_budget():
    torch.manual_seed(0)
    model = Sleepy(0.002, 8)
    x = torch.rand(4, 3, 8, 8)
    roomy = fl.evaluate(model, x, explainer=lambda m, inputs, t: inputs.clone(), metrics=["mu_fidelity"],
                        budget="1h", batch_size=8, progress=False)
    assert roomy.attrs["budget"].counts["n_subsets"] == 200
    tight = fl.evaluate(model, x, explainer=lambda m, inputs, t: inputs.clone(), metrics=["mu_fidelity"],
                        budget=1.0, batch_size=8, progress=False)
    chosen = tight.attrs["budget"].counts["n_subsets"]
    assert 20 <= chosen < 200
    assert fl.evaluate.__doc__.count("budget") >= 1
    with pytest.raises(ValueError, match="budget"):
        fl.evaluate(model, x, explainer=lambda m, inputs, t: inputs.clone(), metrics=["mu_fidelity"], budget=1e-4,
                    batch_size=8, progress=False)
    with pytest.raises(TypeError, match="budget"):
        fl.evaluate(small_cnn(3, 8, 2), [x[:2], x[2:]], explainer=lambda m, inputs, t: inputs.clone(),
                    metrics=["mu_fidelity"], budget=10, progress=False)
