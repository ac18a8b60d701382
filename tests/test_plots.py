from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402

from faithlab import plots  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _tidy() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = [(m, s, seed, s * (i + 1) + rng.normal(0, 0.1))
            for i, m in enumerate(["fid", "rfid", "ffid"]) for s in (0.1, 0.5, 0.9) for seed in range(4)]
    return pd.DataFrame(rows, columns=["method", "sparsity", "seed", "score"])


@pytest.mark.parametrize("band", ["sd", "se", None])
def test_curves_one_line_per_hue_with_mean_and_band(band):
    df = _tidy()
    ax = plots.curves(df, x="sparsity", y="score", hue="method", band=band)
    lines = [line for line in ax.lines if len(line.get_xdata())]  # seaborn adds empty lines as legend handles
    assert len(lines) == 3 and len(ax.get_legend().get_texts()) == 3
    bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert len(bands) == (0 if band is None else 3)
    groups = df.groupby(["method", "sparsity"])["score"]
    means, sds = groups.mean(), groups.std()
    for line, method in zip(lines, df["method"].unique()):
        np.testing.assert_allclose(line.get_ydata(), means[method].to_numpy())
    if band == "sd":  # the first band spans mean ± sd of the first method
        ys = bands[0].get_paths()[0].vertices[:, 1]
        m, s = means["fid"].to_numpy(), sds["fid"].to_numpy()
        np.testing.assert_allclose([ys.min(), ys.max()], [(m - s).min(), (m + s).max()])


def test_correlation_bars_heights_are_group_means():
    df = _tidy()
    ax = plots.correlation_bars(df, x="method", y="score", hue="sparsity")
    bars = [p for c in ax.containers for p in c]
    assert len(bars) == 9
    heights = sorted(b.get_height() for b in bars)
    np.testing.assert_allclose(heights, sorted(df.groupby(["method", "sparsity"])["score"].mean()))
    assert ax.get_ylim() == (-1.05, 1.05)


def test_heatmap_overlay_unnormalises_and_checks_shape():
    image = torch.zeros(3, 4, 5)
    attr = torch.rand(4, 5, generator=torch.Generator().manual_seed(0))
    ax = plots.heatmap_overlay(image, attr, mean=[0.2, 0.4, 0.6], std=[0.5, 0.5, 0.5], alpha=0.3)
    assert len(ax.images) == 2
    base, heat = ax.images
    np.testing.assert_allclose(np.asarray(base.get_array())[0, 0], [0.2, 0.4, 0.6])
    assert heat.get_alpha() == 0.3
    np.testing.assert_allclose(np.asarray(heat.get_array()), attr.numpy(), rtol=1e-6)
    gray = plots.heatmap_overlay(np.arange(20.0).reshape(4, 5), attr.numpy()[None])
    assert np.asarray(gray.images[0].get_array()).max() == 1.0  # min-max scaled without mean/std
    with pytest.raises(ValueError, match="attribution"):
        plots.heatmap_overlay(image, torch.zeros(5, 4))
    with pytest.raises(ValueError, match="image"):
        plots.heatmap_overlay(torch.zeros(2, 4, 5), attr)


def test_image_grid_layout_and_overlays():
    images = torch.rand(5, 3, 6, 6, generator=torch.Generator().manual_seed(1))
    fig = plots.image_grid(images, titles=list("abcde"), ncols=3)
    assert len(fig.axes) == 6
    assert [len(ax.images) for ax in fig.axes] == [1, 1, 1, 1, 1, 0]
    assert [ax.get_title() for ax in fig.axes[:5]] == list("abcde")
    fig = plots.image_grid(images[:2], attributions=torch.rand(2, 6, 6), ncols=4, alpha=0.4)
    assert len(fig.axes) == 2 and all(len(ax.images) == 2 for ax in fig.axes)
    with pytest.raises(ValueError, match="titles"):
        plots.image_grid(images, titles=["a"])


def test_set_style_and_column_errors():
    plots.set_style()
    assert plt.rcParams["axes.grid"] and not plt.rcParams["axes.spines.top"]
    with pytest.raises(ValueError, match="hue"):
        plots.curves(_tidy(), x="sparsity", y="score", hue="nope")
    with pytest.raises(ValueError, match="band"):
        plots.curves(_tidy(), x="sparsity", y="score", band="ci")
    plt.rcdefaults()


def test_radar_one_closed_polygon_per_row_and_value_errors():
    values = pd.DataFrame([[0.0, 0.5, 1.0, 0.25], [1.0, 0.2, 0.0, 0.75], [0.3, 0.3, 0.3, 0.3]],
                          index=["A", "Random", "B"], columns=["m1", "m2", "m3", "m4"])
    ax = plots.radar(values, title="t")
    assert ax.name == "polar" and ax.get_title() == "t" and len(ax.lines) == 3
    assert [t.get_text() for t in ax.get_xticklabels()] == ["m1", "m2", "m3", "m4"]
    for line, (name, row) in zip(ax.lines, values.iterrows()):
        theta, r = line.get_data()
        assert line.get_label() == name
        np.testing.assert_allclose(r, [*row, row.iloc[0]])
        np.testing.assert_allclose(theta, np.append(np.arange(4) * np.pi / 2, 0.0))
    assert ax.lines[1].get_linewidth() > ax.lines[0].get_linewidth()  # Random highlighted
    for bad in (1.2, -0.1, np.nan):
        wrong = values.copy()
        wrong.iloc[0, 1] = bad
        with pytest.raises(ValueError, match="values"):
            plots.radar(wrong)
    with pytest.raises(ValueError, match="ax"):
        plots.radar(values, ax=plt.subplots()[1])


def _scorecard() -> pd.DataFrame:
    rows = [("saco", "case_study", "reproduced"), ("ffidelity", "ranking", "reproduced"),
            ("ffidelity", "ranking", "not reproduced"), ("ffidelity", "robustness", "reproduced"),
            ("basics", "digits", "not testable here")]
    return pd.DataFrame(rows, columns=["paper", "experiment", "verdict"])


def test_study_map_one_label_per_paper_metric_and_experiment_and_bars_per_verdict():
    from collections import Counter

    from matplotlib.patches import Rectangle

    metrics = {"trace": ["ΣLeRF"], "saco": ["SaCo", "AUC"], "ffidelity": ["Fid+", "Fid−", "FFid+"]}
    fig = plots.study_map(_scorecard(), metrics, names={"ffidelity": "F-Fid", "saco": "SaCo"})
    (ax,) = fig.axes
    texts = Counter(t.get_text() for t in ax.texts)
    expected = Counter(["F-Fid", "SaCo", "trace", "basics",  # papers: display name, else the slug
                        "Fid+", "Fid−", "FFid+", "SaCo", "AUC", "ΣLeRF",  # metrics ("SaCo" twice: paper and metric)
                        "ranking", "robustness", "case_study", "digits"])  # experiments, once per paper
    assert {label: texts[label] for label in expected} == dict(expected)
    assert texts["no verdict yet"] == 1  # trace has metrics but no claim
    papers = [t for t in ax.texts if t.get_text() in {"F-Fid", "SaCo", "trace", "basics"} and t.get_bbox_patch()]
    assert [t.get_text() for t in sorted(papers, key=lambda t: t.get_position()[1])] == [  # y grows downwards
        "F-Fid", "SaCo", "trace", "basics"]
    colours = {matplotlib.colors.to_hex(c): v for v, c in plots.VERDICT_COLORS.items()}
    bars = [(colours[matplotlib.colors.to_hex(p.get_facecolor())], p.get_width()) for p in ax.patches
            if isinstance(p, Rectangle) and matplotlib.colors.to_hex(p.get_facecolor()) in colours]
    assert [v for v, _ in bars] == ["reproduced", "not reproduced", "reproduced", "not testable here"]
    np.testing.assert_allclose([w for _, w in bars], np.array([2, 1, 1, 1]) * bars[0][1] / 2)  # one scale
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(plots.VERDICT_COLORS)
    small, large = (plots.study_map(_scorecard().iloc[:n], metrics).get_size_inches()[1] for n in (1, 5))
    assert large > small  # the height follows the rows


def test_study_map_rejects_bad_arguments():
    card, metrics = _scorecard(), {"saco": ["SaCo"]}
    with pytest.raises(TypeError, match="scorecard"):
        plots.study_map(card.to_dict(), metrics)
    with pytest.raises(ValueError, match="scorecard.*verdict"):
        plots.study_map(card.drop(columns="verdict"), metrics)
    with pytest.raises(ValueError, match="scorecard.*great"):
        plots.study_map(card.assign(verdict="great"), metrics)
    with pytest.raises(TypeError, match="metrics"):
        plots.study_map(card, [("saco", ["SaCo"])])
    with pytest.raises(TypeError, match=r"metrics\['saco'\]"):
        plots.study_map(card, {"saco": "SaCo"})
    with pytest.raises(TypeError, match="names"):
        plots.study_map(card, metrics, names=["SaCo"])
    with pytest.raises(ValueError, match="no paper"):
        plots.study_map(card.iloc[:0], {})
    with pytest.raises(TypeError, match="papers"):
        plots.paper_order("saco")
