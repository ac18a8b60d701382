"""The degraded-explainer protocol: ξ = 0 is the clean explainer, seeds are reproducible, degradation hurts Fid+."""

from __future__ import annotations

import pytest
import torch
from oracles import Gated

import faithlab as fl
import faithlab_study as fs


def CountModel() -> Gated:
    """Class 1 while at least 3 of the first 4 pixels are kept (x = 1 there, zero reference), else class 0."""
    return Gated((torch.arange(16) < 4).view(1, 4, 4), m=2, label=1)


def setup():
    x = torch.ones(6, 1, 4, 4)
    y = torch.ones(6, dtype=torch.long)
    clean = torch.zeros(6, 1, 4, 4)
    clean.view(6, -1)[:, :4] = torch.tensor([4.0, 3.0, 2.0, 1.0])  # a faithful map: the 4 relevant pixels on top
    return CountModel().eval(), x, y, clean


def test_clean_level_equals_plain_fidelity_and_degradation_lowers_fid_plus():
    model, x, y, clean = setup()
    sparsity = [0.0625, 0.125, 0.5]  # 1, 2 and 8 of the 16 pixels
    plus, minus = fs.papers.degraded_fidelity_curves(model, x, y, clean, noise_levels=[0.0, 1.0], sparsity=sparsity, n_seeds=2,
                                                        batch_size=7)
    assert plus.shape == minus.shape == (2, 2, 3)
    expected = fl.metrics.fid_plus(model, x, clean, target=y, sparsity=sparsity, generator=0, ties="random").mean(0)
    assert torch.equal(plus[0, 0], expected)
    assert plus[0, 0].tolist() == [0.0, 1.0, 1.0]  # removing 1 relevant pixel keeps the class, 2 flip it
    assert bool((plus[:, 1].sum(-1) < plus[:, 0].sum(-1)).all())  # a random permutation of the map scores worse


def test_seeds_reproduce_and_differ():
    model, x, y, clean = setup()
    kw = dict(n_seeds=2, alpha=0.5, n_samples=4)
    a = fs.papers.degraded_fidelity_curves(model, x, y, clean, noise_levels=[0.5], sparsity=[0.25, 0.5], **kw)
    b = fs.papers.degraded_fidelity_curves(model, x, y, clean, noise_levels=[0.5], sparsity=[0.25, 0.5], **kw)
    assert all(torch.equal(p, q) for p, q in zip(a, b))
    assert not torch.equal(a[0][0], a[0][1])  # seed 0 and seed 1 degrade differently


# --------------------------------------------------------------------------------------- image_ranking_study
def key_pixel_data(n: int, seed: int) -> fl.data.TensorData:
    """4×4 grey images of small noise whose class is the sign of one key pixel (±2 at (1, 1)): removing the key
    (zero reference) leaves no evidence, removing any other pixel changes nothing."""
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 2, (n,), generator=g)
    x = 0.3 * torch.randn(n, 1, 4, 4, generator=g)
    x[:, 0, 1, 1] = 4.0 * y - 2.0
    return fl.data.TensorData(x, y, info={"name": "key_pixel", "n_classes": 2})


STUDY = dict(noise_levels=[0.0, 1.0], sparsity=[0.25, 0.5], n_test=64, n_seeds=1, alpha=0.5, beta=0.25,
             n_samples=4, batch_size=100)


def run_study(tmp_path, monkeypatch, methods=("Fidelity", "R-Fidelity", "F-Fidelity", "Fidelity+Fine-tune", "ROAR",
                                             "ROAD")):
    monkeypatch.setenv("FAITHLAB_CACHE", str(tmp_path))
    config = fl.train.TrainConfig(epochs=6, lr=1e-2, batch_size=32, seed=0)
    return fs.papers.image_ranking_study(
        "small_cnn", {"in_channels": 1, "n_classes": 2, "width": 4}, key_pixel_data(192, 0), key_pixel_data(64, 1),
        {"IxG": ("input_x_gradient", {})}, data_key={"dataset": "key_pixel"}, train_config=config,
        finetune_config=fl.train.TrainConfig(epochs=2, lr=1e-3, batch_size=32, seed=0), roar_config=config,
        methods=methods, **STUDY)


def test_study_ranks_a_clean_map_above_a_random_one(tmp_path, monkeypatch):
    """Oracle: input × gradient of the key-pixel model puts the key first, its full permutation (ξ = 1) does not, so every
    setting that keeps a trained model must give MoRF vs GT = −1, LeRF vs GT = +1 and MoRF vs LeRF = −1."""
    study = run_study(tmp_path, monkeypatch)
    assert study.accuracy["original"] > 0.95 and study.accuracy["fine-tuned"] > 0.95
    assert bool((study.clean["IxG", "original"].argmax(1) == 5).all())  # pixel (1, 1) is unit 5
    tidy = study.correlations(["Fidelity", "R-Fidelity", "F-Fidelity", "Fidelity+Fine-tune", "ROAD"])
    macro = tidy[tidy["row"] == "Macro Corr."].set_index(["method", "correlation"])["mean"]
    assert macro.xs("morf_vs_gt", level=1).eq(-1).all() and macro.xs("lerf_vs_gt", level=1).eq(1).all()
    assert macro.xs("morf_vs_lerf", level=1).eq(-1).all()
    assert set(study.curves["method"]) == set(fs.papers.SETTINGS) and len(study.curves) == 6 * 2 * 2 * 2
    # the curves equal a direct call with the same model, map and settings
    plus, minus = fs.papers.degraded_fidelity_curves(
        study.models["fine-tuned"], study.x, study.y, study.clean["IxG", "fine-tuned"].view(-1, 4, 4),
        noise_levels=STUDY["noise_levels"], sparsity=STUDY["sparsity"], n_seeds=1, alpha=0.5, beta=0.25, n_samples=4,
        batch_size=STUDY["batch_size"])  # the study's batch shapes: the same logits bit for bit, hence torch.equal
    assert torch.equal(plus, study.P["IxG", "F-Fidelity"]) and torch.equal(minus, study.Q["IxG", "F-Fidelity"])
    # ROAD: Fidelity with the removed pixels imputed (noisy linear imputation keyed to the seed and the image)
    plus, minus = fs.papers.degraded_fidelity_curves(
        study.models["original"], study.x, study.y, study.clean["IxG", "original"].view(-1, 4, 4),
        noise_levels=STUDY["noise_levels"], sparsity=STUDY["sparsity"], n_seeds=1, reference="road",
        batch_size=STUDY["batch_size"])
    assert torch.equal(plus, study.P["IxG", "ROAD"]) and torch.equal(minus, study.Q["IxG", "ROAD"])


def test_study_costs_count_every_image_pass(tmp_path, monkeypatch):
    study = run_study(tmp_path, monkeypatch, methods=("Fidelity", "F-Fidelity", "ROAR"))
    costs = study.costs.set_index(["stage", "method"], drop=False)
    n, levels, per_level = 64, 2, 2 * 1 * 2  # test images, sparsity levels, (+, −) × seeds × noise levels
    assert costs.loc[("evaluate", "Fidelity"), "image passes"] == per_level * n * (1 + levels)
    assert costs.loc[("evaluate", "F-Fidelity"), "image passes"] == per_level * n * (1 + levels * 4)
    assert costs.loc[("explain train set", None), "image passes"] == 192  # input × gradient: one pass per image
    assert costs.loc[("explain train set", None), "backward passes"] == 192
    assert costs.loc[("evaluate", "Fidelity"), "backward passes"] == 0
    assert costs.loc[("train original", None), "image passes"] == 6 * (192 + 64)
    assert costs.loc[("train original", None), "backward passes"] == 6 * 192
    assert costs.loc[("fine-tune", None), "image passes"] == 2 * (192 + 64)
    assert set(costs["model"]) == {"original", "fine-tuned", "ROAR IxG"} and bool((costs["seconds"] >= 0).all())
    again = run_study(tmp_path, monkeypatch, methods=("Fidelity", "F-Fidelity", "ROAR"))  # weights from the cache
    assert bool(again.costs.loc[again.costs["stage"].isin(["train original", "fine-tune", "retrain (ROAR)"]),
                                "cached"].all())
    assert all(torch.equal(again.P[k], study.P[k]) for k in study.P)


def test_study_split_over_grid_cells_equals_the_whole_study(tmp_path, monkeypatch):
    """The study runner's shards: studies of parts of the (seed, level) grid, joined with with_curves (in any order,
    after a CSV round trip as fs.artifacts.sharded does), give the very same curves, P and Q as the whole study."""
    import io

    import pandas as pd

    monkeypatch.setitem(STUDY, "n_seeds", 2)
    whole = run_study(tmp_path, monkeypatch, methods=("Fidelity", "F-Fidelity"))
    grid = [(s, k) for s in range(2) for k in range(2)]

    def part(cells):
        study = fs.papers.image_ranking_study(
            "small_cnn", {"in_channels": 1, "n_classes": 2, "width": 4}, key_pixel_data(192, 0), key_pixel_data(64, 1),
            {"IxG": ("input_x_gradient", {})}, data_key={"dataset": "key_pixel"},
            train_config=fl.train.TrainConfig(epochs=6, lr=1e-2, batch_size=32, seed=0),
            finetune_config=fl.train.TrainConfig(epochs=2, lr=1e-3, batch_size=32, seed=0),
            methods=("Fidelity", "F-Fidelity"), cells=cells, **STUDY)
        return study, pd.read_csv(io.StringIO(study.curves.to_csv(index=False)))

    (empty, _), (_, a), (_, b) = part([]), part(grid[3:]), part(grid[:3])
    assert empty.P["IxG", "Fidelity"].isnan().all() and len(empty.curves) == 0
    joined = empty.with_curves(pd.concat([a, b], ignore_index=True))
    assert all(torch.equal(joined.P[k], whole.P[k]) and torch.equal(joined.Q[k], whole.Q[k]) for k in whole.P)
    pd.testing.assert_frame_equal(joined.curves, whole.curves, check_dtype=False)
    with pytest.raises(ValueError, match="missing"):
        empty.with_curves(b)
    with pytest.raises(ValueError, match="outside"):
        part([(2, 0)])


def test_case_study_scores_one_image_as_a_direct_call(tmp_path, monkeypatch):
    """F-Fidelity's Fig. 2: one image's curves. Every method's curves equal a direct call on that image with the
    study's models, map and settings, and at ξ = 0 (the map not degraded, all of R removed: no randomness) plain
    Fidelity's curves of the images one by one average to the study's."""
    study = run_study(tmp_path, monkeypatch, methods=("Fidelity", "F-Fidelity", "ROAR"))
    curves, P, Q = study.case_study(3, "IxG")
    assert set(curves["method"]) == {"Fidelity", "F-Fidelity", "ROAR"} and len(curves) == 3 * 2 * 1 * 2 * 2
    alone = torch.stack([study.case_study(i, "IxG", methods=["Fidelity"])[1]["IxG", "Fidelity"][0, 0]
                         for i in range(len(study.x))])
    assert torch.allclose(alone.mean(0), study.P["IxG", "Fidelity"][0, 0], atol=1e-6)
    x, y = study.x[3:4], study.y[3:4]
    plus, minus = fs.papers.degraded_fidelity_curves(
        study.models["fine-tuned"], x, y, study.clean["IxG", "fine-tuned"][3:4].view(1, 4, 4),
        noise_levels=STUDY["noise_levels"], sparsity=STUDY["sparsity"], n_seeds=1, alpha=0.5, beta=0.25, n_samples=4,
        batch_size=STUDY["batch_size"])
    assert torch.equal(plus, P["IxG", "F-Fidelity"]) and torch.equal(minus, Q["IxG", "F-Fidelity"])
    roar = fs.papers.degraded_fidelity_curves(
        study.models["ROAR IxG"], x, y, study.clean["IxG", "original"][3:4].view(1, 4, 4),
        noise_levels=STUDY["noise_levels"], sparsity=STUDY["sparsity"], n_seeds=1, batch_size=STUDY["batch_size"])
    assert torch.equal(roar[0], P["IxG", "ROAR"])
    only, P1, _ = study.case_study(3, "IxG", methods=["Fidelity"])
    assert set(only["method"]) == {"Fidelity"} and torch.equal(P1["IxG", "Fidelity"], P["IxG", "Fidelity"])
    for kwargs, match in (({"index": 64}, "index"), ({"index": 0, "explainer": "GradCAM"}, "explainer"),
                          ({"index": 0, "methods": ["R-Fidelity"]}, "methods")):
        with pytest.raises(ValueError, match=match):
            study.case_study(**{"explainer": "IxG", **kwargs})


def test_study_rejects_bad_arguments(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="methods"):
        run_study(tmp_path, monkeypatch, methods=("Fidelity", "AOPC"))
    monkeypatch.setenv("FAITHLAB_CACHE", str(tmp_path))
    config = fl.train.TrainConfig(epochs=1)
    with pytest.raises(ValueError, match="roar_config"):
        fs.papers.image_ranking_study("small_cnn", {}, key_pixel_data(8, 0), key_pixel_data(8, 1),
                                         {"S": ("saliency", {})}, data_key={}, train_config=config,
                                         finetune_config=config, methods=("ROAR",))
    with pytest.raises(ValueError, match="explainer_specs"):
        fs.papers.image_ranking_study("small_cnn", {}, key_pixel_data(8, 0), key_pixel_data(8, 1), {},
                                         data_key={}, train_config=config, finetune_config=config)


# ------------------------------------------------------------------------------------------------- tables
def test_correlation_table_layout_and_wins_on_hand_made_curves():
    """Method "good" orders three explainers perfectly, "bad" in reverse: correlations ∓1, ranks 1 and 2."""
    xi = torch.tensor([0.0, 0.5, 1.0])
    good_p = (1 - xi)[None, :, None].expand(2, 3, 4).clone()   # MoRF decreasing in ξ
    good_q = xi[None, :, None].expand(2, 3, 4).clone()         # LeRF increasing in ξ
    P = {("E", "good"): good_p, ("E", "bad"): good_q}
    Q = {("E", "good"): good_q, ("E", "bad"): good_p}
    tidy = fs.papers.ranking_correlations(P, Q, noise_levels=xi.tolist(), sparsity=[0.2, 0.4, 0.6, 0.8],
                                             methods=["good", "bad"], group="e")
    corr = tidy[tidy["row"] != "Micro Rank"].set_index(["method", "correlation", "row"])["mean"].sort_index()
    assert corr.loc["good", "morf_vs_gt"].eq(-1).all() and corr.loc["bad", "morf_vs_gt"].eq(1).all()
    assert corr.loc["good", "morf_vs_lerf"].eq(-1).all() and corr.loc["bad", "morf_vs_lerf"].eq(-1).all()
    ranks = tidy[tidy["row"] == "Micro Rank"].set_index(["method", "correlation"])["mean"]
    assert ranks["good", "morf_vs_gt"] == 1 and ranks["bad", "morf_vs_gt"] == 2
    assert ranks["good", "morf_vs_lerf"] == ranks["bad", "morf_vs_lerf"] == 1  # tie: both share the minimum rank
    layout = fs.papers.table_layout(tidy.assign(paper=-0.5), group="e", paper="paper")
    assert list(layout.columns) == ["row", "correlation", "E good", "E bad"]
    assert layout.iloc[0]["E good"] == "-1.00 ± 0.00 (-0.50)" and layout.iloc[0]["correlation"] == "MoRF vs GT ↓"


def test_oriented_correlations_sign_each_correlation_towards_higher_is_better():
    xi = torch.tensor([0.0, 0.5, 1.0])
    good_p = (1 - xi).view(1, 3, 1).expand(2, 3, 2)  # ideal evaluation: −1, +1, −1
    good_q = xi.view(1, 3, 1).expand(2, 3, 2)
    P = {("E", "good"): good_p, ("E", "bad"): good_q}  # "bad" swaps the curves: +1, −1 and still −1
    Q = {("E", "good"): good_q, ("E", "bad"): good_p}
    table = fs.papers.oriented_correlations(P, Q, noise_levels=xi.tolist(), sparsity=[0.3, 0.6],
                                               methods=["good", "bad"], group="e").set_index(["method", "kind"])
    assert table.loc[("good", "macro"), "oriented mean"] == pytest.approx(1.0)
    assert table.loc[("bad", "micro"), "oriented mean"] == pytest.approx((-1 - 1 + 1) / 3)
    assert table.loc[("good", "macro"), fs.papers.CORRELATION_LABELS["lerf_vs_gt"]] == pytest.approx(1.0)


def _three_methods(n_seeds=3, n_levels=8):
    """Curves of three methods over three explainers: "perfect" orders them ideally at every seed and level,
    "reversed" swaps MoRF and LeRF (oriented micro −1/3), "half" is perfect on even levels and reversed on odd."""
    xi = torch.tensor([0.0, 0.5, 1.0])
    good_p = (1 - xi)[None, :, None].expand(n_seeds, 3, n_levels).clone()
    good_q = xi[None, :, None].expand(n_seeds, 3, n_levels).clone()
    half_p, half_q = good_p.clone(), good_q.clone()
    half_p[..., 1::2], half_q[..., 1::2] = good_q[..., 1::2], good_p[..., 1::2]
    P = {("E", "reversed"): good_q, ("E", "half"): half_p, ("E", "perfect"): good_p}
    Q = {("E", "reversed"): good_p, ("E", "half"): half_q, ("E", "perfect"): good_q}
    levels = [(i + 1) / (n_levels + 1) for i in range(n_levels)]
    return fs.papers.micro_cells(P, Q, noise_levels=xi.tolist(), sparsity=levels,
                                    methods=["reversed", "half", "perfect"], group="e")


def test_micro_cells_hold_per_cell_ranks_and_oriented_correlations():
    cells = _three_methods()
    by = cells.set_index(["method", "seed", "level"]).sort_index()
    assert len(cells) == 3 * 3 * 8
    assert bool((by.loc["perfect", "oriented micro"] == 1).all())
    assert by.loc["reversed", "oriented micro"].to_numpy() == pytest.approx(-1 / 3)
    even = cells["level"].isin(sorted(cells["level"].unique())[0::2])
    half = cells[(cells["method"] == "half") & even]
    assert bool((half["oriented micro"] == 1).all()) and bool((half["micro rank"] == 1).all())
    # MoRF vs LeRF is −1 for every method (rank 1 shared). On even levels "reversed" is ranked 3 on both GT
    # correlations behind two perfect methods → 7/3; on odd levels it ties with "half" at rank 2 → 5/3
    rev = cells[cells["method"] == "reversed"]
    assert rev[even[rev.index]]["micro rank"].to_numpy() == pytest.approx(7 / 3)
    assert rev[~even[rev.index]]["micro rank"].to_numpy() == pytest.approx(5 / 3)


def test_replica_means_average_each_replicas_cells_on_known_answers():
    import pandas as pd

    cells = pd.concat([_three_methods().assign(replica=r) for r in range(2)], ignore_index=True)
    means = fs.papers.ffidelity.replica_means(cells, group="e", value="E", column="micro rank")
    # per replica: "perfect" rank 1 everywhere, "reversed" 7/3 on four levels and 5/3 on the other four
    assert list(means.index) == [0, 1] and means["perfect"].tolist() == [1.0, 1.0]
    assert means["reversed"].to_numpy() == pytest.approx([2.0, 2.0])
    one = fs.papers.ffidelity.replica_means(cells.drop(columns="replica"), group="e", value="E",
                                               column="oriented micro", methods=["perfect"])
    assert list(one.columns) == ["perfect"] and len(one) == 1  # no replica column: one replica
    with pytest.raises(ValueError, match="not in the cells"):
        fs.papers.ffidelity.replica_means(cells, group="e", value="F", column="micro rank")
    with pytest.raises(ValueError, match="ROAR"):
        fs.papers.ffidelity.replica_means(cells, group="e", value="E", column="micro rank", methods=["ROAR"])


def test_constant_map_counts_count_maps_without_a_ranking():
    scores = {("GradCAM", "original"): torch.tensor([[0.0, 0.0, 0.0], [0.1, 0.0, 0.2], [2.0, 2.0, 2.0]]),
              ("Saliency", "original"): torch.tensor([[0.3, 0.1, 0.2], [0.1, 0.0, 0.2], [1.0, 2.0, 3.0]])}
    table = fs.papers.constant_map_counts(scores).set_index("explainer")
    assert table.loc["GradCAM", "constant maps"] == 2 and table.loc["Saliency", "constant maps"] == 0
    assert table["maps"].tolist() == [3, 3]


def test_saco_protocol_flags_constant_maps_instead_of_warning(recwarn):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 3)).eval()
    x = torch.randn(3, 1, 4, 4)
    maps = torch.randn(3, 1, 4, 4)
    maps[1] = 0.0
    out = fs.papers.saco.per_sample_metrics(model, x, torch.tensor([0, 1, 2]), maps, k=4)
    assert out["constant map"].tolist() == [False, True, False]
    assert out["SaCo"][1] == 0
    assert not [w for w in recwarn if issubclass(w.category, fl.perturb.ConstantMapWarning)]
    with pytest.warns(fl.perturb.ConstantMapWarning):  # the metric itself still warns when called directly
        fl.metrics.saco(model, x, maps, k=4)


def test_random_masking_removes_exactly_the_ratio_with_the_same_draws_for_every_model():
    class CountsZeros(torch.nn.Module):  # predicts the number of removed (zeroed) pixels, and which ones in logits
        def forward(self, x):
            zeros = (x.flatten(1) == 0).sum(1)
            return -(torch.arange(17.0)[None] - zeros[:, None]) ** 2

    class FirstZero(torch.nn.Module):  # predicts the index of the first removed pixel
        def forward(self, x):
            return (x.flatten(1) == 0).float() * 10 + torch.linspace(0, -1, 16)[None]

    x = torch.ones(5, 1, 4, 4)
    run = lambda seed: fs.papers.random_masking_predictions(  # noqa: E731
        {"count": CountsZeros().eval(), "first": FirstZero().eval()}, x, 0.25, n_draws=3, generator=seed, batch_size=4)
    out = run(0)
    assert out["count"].shape == (5, 3) and bool((out["count"] == 4).all())  # round(0.25·16) units each time
    assert torch.equal(out["first"], run(0)["first"])  # the draws depend only on the seed
    assert not torch.equal(out["first"], run(1)["first"])
    assert out["first"].unique().numel() > 1  # different draws for different inputs and draws
    with pytest.raises(ValueError, match="ratio"):
        fs.papers.random_masking_predictions({"count": CountsZeros().eval()}, x, 1.5, generator=0)
