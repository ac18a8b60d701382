"""Monte-Carlo standard errors (issue 52, item 3): every Monte-Carlo score of ``fl.evaluate`` (RFid±, FFid±, μF,
S_avg) carries its standard error, read from the draws the score is computed from; the report shows it.

Oracles whose per-draw values are known by hand (a model whose output is a known function of the features present,
an explainer whose map is its input), the 1/√R law, invariance to batch_size and chunk_size, NaN for the
deterministic metrics, the checkpoint round trip, and the report's "not separated" sentence on small frames."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
import torch
from oracles import small_cnn
from torch import nn

import faithlab as fl
from faithlab import report
from faithlab.evaluation import METRICS
from faithlab.evaluation.frame import tidy
from faithlab.metrics.papers import ffidelity
from faithlab.metrics.papers.reco_mege import baselines
from faithlab.metrics.statistics import pearson, spearman

MC_METRICS = {"rfid+", "rfid-", "ffid+", "ffid-", "mu_fidelity", "s_avg"}


class Present(nn.Module):
    """Two classes with p(class 0 | x) = q0 + Σ_p β_p·1[x_p ≠ 0]: each input's read-out is a known function of the
    features present (zero reference: a removed feature is 0). Keeps every input it is given in ``seen``."""

    def __init__(self, beta: torch.Tensor, q0: float = 0.05):
        super().__init__()
        self.beta, self.q0, self.seen = beta.double(), q0, []
        self.eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.seen.append(x.detach().clone())
        q = self.q0 + (x.flatten(1) != 0).double() @ self.beta
        return torch.stack([q.log(), (1 - q).log()], dim=1)

    def read_out(self, rows: torch.Tensor) -> torch.Tensor:
        """The oracle: p(class 0) of each input, by hand from the features present."""
        return self.q0 + ((rows.flatten(1) != 0).double() * self.beta).sum(1)


def _present_inputs(b: int = 3):
    """b samples of 8 features (1 × 2 × 4 images), sample i every feature equal to i + 1 (so an input names its
    sample), distinct attributions, and the Present model."""
    g = torch.Generator().manual_seed(4)
    x = (torch.arange(b, dtype=torch.float64) + 1).view(b, 1, 1, 1).expand(b, 1, 2, 4).clone()
    a = torch.rand(b, 1, 2, 4, generator=g, dtype=torch.float64)
    model = Present(torch.linspace(0.01, 0.1, 8, dtype=torch.float64))
    return model, x, a


@pytest.mark.parametrize("plus", [True, False])
def test_rfid_standard_error_is_the_hand_computed_sd_over_root_r(plus):
    """Exact sampling removes 1 feature at the first level and 3 at the second (α = ½ of |R| = 2 and 6): each
    input the model saw names its sample (its value) and its level (how many features are 0), so the per-mask
    read-outs are read off the inputs by the oracle, and the SE by hand: sd (ddof 1)/√R per level, √(Σ var_l/R)/L
    for the mean over the levels."""
    model, x, a = _present_inputs()
    r = 6
    fn = ffidelity.fid_plus_details if plus else ffidelity.fid_minus_details
    sparsity = [0.25, 0.75] if plus else [0.75, 0.25]   # |R| = 2 and 6 either way: 1 and 3 features removed
    d = fn(model, x, a, target=torch.zeros(3, dtype=torch.int64), sparsity=sparsity, alpha=0.5, n_samples=r,
           sampling="exact", output="prob", generator=7, batch_size=5)
    rows = torch.cat(model.seen)
    sample = rows.flatten(1).amax(1).round().long() - 1
    removed = (rows.flatten(1) == 0).sum(1)
    truth = model.read_out(rows)
    se = torch.empty(3, 2, dtype=torch.float64)
    for i in range(3):
        for level, k in enumerate((1, 3)):
            draws = truth[(sample == i) & (removed == k)]
            assert draws.numel() == r                          # every mask of this sample and level, and no other
            torch.testing.assert_close(d["removed"][i, level].double(), draws.mean(), rtol=0, atol=1e-12)
            se[i, level] = draws.std(correction=1) / math.sqrt(r)
    assert bool((se > 0).all())                                # the masks do differ: a real spread
    torch.testing.assert_close(d["mc_se"], se, rtol=1e-10, atol=0)
    torch.testing.assert_close(d["mean_mc_se"], se.pow(2).sum(1).sqrt() / 2, rtol=1e-10, atol=0)


def test_s_avg_standard_error_is_the_hand_computed_sd_over_root_r():
    """An explainer whose map is its input: the distance to neighbour z is ‖z − x‖², read off the inputs the
    explainer saw, so S_avg's SE is sd/√n_neighbours by hand."""
    model = small_cnn(in_channels=1, side=4, n_classes=2).double()
    g = torch.Generator().manual_seed(1)
    x = torch.randn(3, 1, 4, 4, generator=g, dtype=torch.float64) * 10
    seen = []

    def identity(m, z, t):
        seen.append(z.detach().clone())
        return z.clone()

    r = 9
    d = baselines.average_stability_details(model, x, explainer=identity, target=torch.zeros(3, dtype=torch.int64),
                                        n_neighbours=r, radius=2.0, generator=5, batch_size=4)
    z = torch.cat(seen)
    dist = (z[:, None] - x[None]).flatten(2).pow(2).sum(2)    # (rows, samples)
    nearest = dist.argmin(1)
    own = dist.gather(1, nearest[:, None]).squeeze(1)
    neighbour = own > 0                                        # the maps of x itself sit at distance 0
    expected = []
    for i in range(3):
        values = own[neighbour & (nearest == i)]
        assert values.numel() == r
        expected.append(values.std(correction=1) / math.sqrt(r))
    torch.testing.assert_close(d["mc_se"], torch.stack(expected), rtol=1e-10, atol=0)


@pytest.mark.parametrize("correlation, reference", [("pearson", pearson), ("spearman", spearman)])
def test_mu_fidelity_standard_error_is_the_jackknife_over_the_subsets(correlation, reference):
    """μF's SE is the jackknife over its subsets: the vectorised leave-one-out equals an explicit loop that drops
    each subset in turn (ties included: the probabilities of the Present model take few values)."""
    model, x, a = _present_inputs()
    r = 12
    d = baselines.mu_fidelity_details(model, x, a, n_subsets=r, subset_fraction=0.25, correlation=correlation,
                                  generator=3)
    sums, drops = d["sums"], d["drops"]
    loo = torch.stack([reference(torch.cat([sums[:, :i], sums[:, i + 1:]], 1),
                                 torch.cat([drops[:, :i], drops[:, i + 1:]], 1)) for i in range(r)], dim=1)
    jack = ((r - 1) / r * (loo - loo.mean(1, keepdim=True)).pow(2).sum(1)).sqrt()
    assert bool(torch.isfinite(jack).all()) and bool((jack > 0).all())
    torch.testing.assert_close(d["mc_se"], jack, rtol=1e-9, atol=1e-12)


def test_the_standard_error_shrinks_like_one_over_root_r():
    """R grows 4× → the SE halves. The SE is s/√R with s² unbiased for σ², so the ratio of the root mean squared SEs
    over many (sample, level) cells is ½·√(mean s²₄R / mean s²_R); each mean of s² has a relative sd ≈ √(2/(R−1))/√cells
    (< 0.08 here), so the ratio lies within ±0.15 of ½ far beyond 2 sd on any seed, while an SE of sd (no √R) gives
    1 and sd/R gives ¼."""
    model = small_cnn(in_channels=1, side=6, n_classes=3).double()
    g = torch.Generator().manual_seed(2)
    x = torch.randn(8, 1, 6, 6, generator=g, dtype=torch.float64)
    a = torch.randn(8, 1, 6, 6, generator=g, dtype=torch.float64)

    def rms(t):
        return float(t.pow(2).mean().sqrt())

    kw = dict(sparsity=[0.2, 0.5, 0.8], alpha=0.5, output="prob", generator=0)
    small = ffidelity.fid_plus_details(model, x, a, n_samples=16, **kw)["mc_se"]
    large = ffidelity.fid_plus_details(model, x, a, n_samples=64, **kw)["mc_se"]
    assert 0.35 < rms(large) / rms(small) < 0.65, rms(large) / rms(small)
    mu = [baselines.mu_fidelity_details(model, x, a, n_subsets=r, generator=0)["mc_se"] for r in (50, 200)]
    assert 0.35 < rms(mu[1]) / rms(mu[0]) < 0.65, rms(mu[1]) / rms(mu[0])
    s = [baselines.average_stability_details(model, x, explainer=lambda m, z, t: z.pow(2), n_neighbours=r,
                                         radius=3.0, generator=0)["mc_se"] for r in (16, 64)]
    assert 0.35 < rms(s[1]) / rms(s[0]) < 0.65, rms(s[1]) / rms(s[0])


def _evaluate_setup():
    model = small_cnn(in_channels=2, side=6, n_classes=3).double()
    g = torch.Generator().manual_seed(9)
    x = torch.randn(5, 2, 6, 6, generator=g, dtype=torch.float64)
    y = model(x).argmax(1).detach()
    maps = {"A": torch.randn(5, 2, 6, 6, generator=g, dtype=torch.float64),
            "B": torch.randn(5, 2, 6, 6, generator=g, dtype=torch.float64)}
    tuned = small_cnn(in_channels=2, side=6, n_classes=3).double()
    with torch.no_grad():
        tuned[0].weight.mul_(1.3)

    def explain(m, z, t):
        return z * m(z).softmax(1).gather(1, t[:, None])[:, :, None, None]

    options = dict(sparsity=[0.3, 0.6], n_samples=6, n_subsets=10, n_neighbours=4, radius=1.0, saco_k=4, edge=3,
                   seed=2, progress=False, hints=False)
    return model, x, y, maps, tuned, explain, options


def test_evaluate_carries_the_details_standard_error_invariant_to_batch_size_and_chunks():
    model, x, y, maps, tuned, explain, options = _evaluate_setup()
    chosen = ["fid+", "rfid+", "rfid-", "ffid+", "ffid-", "saco", "aopc", "mu_fidelity", "s_avg", "lerf"]
    frame = fl.evaluate(model, x, y, maps, metrics=chosen, finetuned=tuned, explainer=explain, **options)
    assert list(frame.columns) == ["explainer", "sample", "metric", "label", "paper", "level", "score",
                                   "higher_is_better", "direction", "mc_se"]
    mc = frame[frame["metric"].isin(MC_METRICS)]
    assert np.isfinite(mc["mc_se"]).all() and (mc["mc_se"] > 0).any()
    assert frame.loc[~frame["metric"].isin(MC_METRICS), "mc_se"].isna().all()   # deterministic: NaN
    # the frame's SE is the details twin's, from the same call (one path)
    a = maps["A"]
    d = ffidelity.fid_minus_details(model, x, a, target=y, sparsity=[0.3, 0.6], alpha=0.5, n_samples=6,
                                    generator=2, sample_index=torch.arange(5))
    got = frame[(frame["explainer"] == "A") & (frame["metric"] == "rfid-")]
    torch.testing.assert_close(torch.tensor(got["mc_se"].to_numpy()), d["mean_mc_se"], rtol=1e-12, atol=0)
    torch.testing.assert_close(torch.tensor(got["score"].to_numpy()), d["score"].mean(1).double(), rtol=0, atol=0)
    # another batch size and chunking: the same standard errors
    other = fl.evaluate(model, x, y, maps, metrics=chosen, finetuned=tuned, explainer=explain, batch_size=3,
                        chunk_size=2, **options)
    pd.testing.assert_frame_equal(frame.drop(columns=["score", "mc_se"]), other.drop(columns=["score", "mc_se"]))
    torch.testing.assert_close(torch.tensor(other["mc_se"].to_numpy()), torch.tensor(frame["mc_se"].to_numpy()),
                               rtol=1e-9, atol=1e-12, equal_nan=True)


def test_deterministic_settings_give_nan():
    """Fid± (α = 1: one fixed mask per size) and a single Monte-Carlo draw have no spread to read: NaN, never 0."""
    model, x, a = _present_inputs()
    d = ffidelity.fid_plus_details(model, x, a, sparsity=[0.25, 0.5], output="prob")
    assert d["mc_se"].shape == (3, 2) and bool(d["mc_se"].isnan().all()) and bool(d["mean_mc_se"].isnan().all())
    one = ffidelity.fid_plus_details(model, x, a, sparsity=[0.5], alpha=0.5, n_samples=1, generator=0,
                                     output="prob")
    assert bool(one["mean_mc_se"].isnan().all())
    assert bool(baselines.mu_fidelity_details(model, x, a, n_subsets=3)["mc_se"].isnan().all())  # LOO over 2: ±1


def test_a_checkpoint_keeps_the_standard_errors(tmp_path):
    model, x, y, maps, tuned, explain, options = _evaluate_setup()
    kw = dict(metrics=["rfid+", "saco"], chunk_size=3, checkpoint=tmp_path / "ck", **options)
    first = fl.evaluate(model, x, y, maps, **kw)
    again = fl.evaluate(model, x, y, maps, **kw)                # every chunk read back from the folder
    pd.testing.assert_frame_equal(first, again)
    assert np.isfinite(again.loc[again["metric"] == "rfid+", "mc_se"]).all()
    call = tmp_path / "ck" / "call.json"                       # a folder written without mc_se is another call's
    head = json.loads(call.read_text())
    head.pop("records")
    call.write_text(json.dumps(head))
    with pytest.raises(ValueError, match="records"):
        fl.evaluate(model, x, y, maps, **kw)


def _frame(means: dict[str, float], se: float, n: int = 4) -> pd.DataFrame:
    """A frame as fl.evaluate returns it: RFid+ (Monte-Carlo, every image's SE ``se``) and SaCo (deterministic)
    of explainers with the given RFid+ means (images spread symmetrically about them)."""
    spread = np.linspace(-0.1, 0.1, n)
    records = []
    for who, mean in means.items():
        for i in range(n):
            records.append({"explainer": who, "sample": i, "metric": "rfid+", "score": mean + spread[i],
                            "mc_se": se})
            records.append({"explainer": who, "sample": i, "metric": "saco", "score": 0.1 * i + mean,
                            "mc_se": math.nan})
    cost = [{"group": METRICS[m].group, "explainer": e, "forward_inputs": 10, "model_calls": 1,
             "explained_inputs": 0, "seconds": 0.1} for m in ("rfid+", "saco") for e in means]
    return tidy(records, ["rfid+", "saco"], list(means), cost)


def test_the_summary_shows_the_standard_error_of_the_mean():
    frame = _frame({"A": 0.5, "B": 0.505, "C": 0.9}, se=0.05)
    means = report.monte_carlo_means(frame)
    assert means.loc[("RFid+", "A"), "mc_se"] == pytest.approx(math.sqrt(4 * 0.05 ** 2) / 4)
    assert means.xs("SaCo")["mc_se"].isna().all()
    table = report.summary(frame)
    assert list(table.columns) == ["A", "B", "C", "direction", "MC se: A", "MC se: B", "MC se: C"]
    assert table.loc["RFid+", "MC se: B"] == pytest.approx(0.025) and math.isnan(table.loc["SaCo", "MC se: B"])
    assert table.loc["RFid+", "A"] == pytest.approx(0.5)        # the means are summary's own, unchanged


def test_the_report_says_which_pairs_the_monte_carlo_error_does_not_separate(tmp_path):
    """A and B differ by 0.005, under 2·√(se_A² + se_B²) = 0.071: not separated; C differs from both by 0.4, 11
    times that: separated. The sentence, pairs.csv and the page say so; SaCo, deterministic, has no ±."""
    frame = _frame({"A": 0.5, "B": 0.505, "C": 0.9}, se=0.05)
    pairs = report.monte_carlo_pairs(frame)
    verdict = {(r.explainer, r.versus): bool(r.separated) for r in pairs.itertuples()}
    assert verdict == {("A", "B"): False, ("A", "C"): True, ("B", "C"): True}
    assert set(pairs["label"]) == {"RFid+"}                     # the deterministic metric is not compared
    sentence = report.monte_carlo_sentence(pairs)
    assert "RFid+ does not separate A and B" in sentence
    assert "A and C" not in sentence and "B and C" not in sentence
    index = report.write(tmp_path / "out", frame, n_boot=50)
    page = index.read_text(encoding="utf-8")
    assert "does not separate A and B" in page or "does not separate B and A" in page
    assert "A and C" not in page and "C and A" not in page
    summary_section = page[page.index("<h2>Mean score"):page.index("<h2>How each metric")]
    rfid_row = summary_section[summary_section.index(">RFid+<"):].split("</tr>")[0]
    saco_row = summary_section[summary_section.index(">SaCo<"):].split("</tr>")[0]
    assert rfid_row.count("±") == 3 and "±" not in saco_row
    written = pd.read_csv(index.parent / "pairs.csv", dtype=str, keep_default_na=False)
    within = {frozenset((r["explainer"], r["versus"])): r[report.WITHIN_MC] for _, r in written.iterrows()}
    assert within[frozenset("AB")] == "RFid+" and within[frozenset("AC")] == "" and within[frozenset("BC")] == ""
    assert "MC se: A" in pd.read_csv(index.parent / "summary.csv").columns
    # far more precise draws: every pair separated, and the page says that instead
    sharp = report.monte_carlo_sentence(report.monte_carlo_pairs(_frame({"A": 0.5, "B": 0.505, "C": 0.9},
                                                                        se=0.0005)))
    assert "does not separate" not in sharp and "Every pair of explainers is separated" in sharp
