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


def test_map_columns_one_row_per_image_the_image_then_each_map():
    images = torch.rand(2, 3, 6, 6, generator=torch.Generator().manual_seed(3))
    maps = {"original": torch.rand(2, 6, 6), "fine-tuned": torch.rand(2, 6, 6)}
    fig = plots.map_columns(images, maps, image_title="canvas", alpha=1.0)
    axes = np.array(fig.axes).reshape(2, 3)
    assert [len(ax.images) for ax in axes.flat] == [1, 2, 2] * 2  # the image alone, then image + map overlays
    assert [ax.get_title() for ax in axes[0]] == ["canvas", "original", "fine-tuned"]
    assert all(ax.get_title() == "" for ax in axes[1])
    np.testing.assert_allclose(np.asarray(axes[1, 2].images[1].get_array()), maps["fine-tuned"][1].numpy(),
                               rtol=1e-6)
    assert axes[0, 1].images[1].get_alpha() == 1.0
    assert plots.check_style(fig) == [] and fig.get_size_inches()[0] <= plots.WIDTH_IN
    with pytest.raises(ValueError, match="one map per image"):
        plots.map_columns(images, {"a": torch.rand(3, 6, 6)})
    with pytest.raises(ValueError, match="at least one column"):
        plots.map_columns(images, {})
    plt.close("all")


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


# ------------------------------------------------------------------------- the book's figure style (check_style)


def _styled_curves():
    """A figure drawn the book's way: set_style, one column wide, legend outside, labels in words."""
    plots.set_style()
    fig, axes = plots.panels(1, 2, legend="right", sharey=True)
    for ax, method in zip(axes[0], ["fid", "rfid"]):
        df = _tidy()
        plots.curves(df[df["method"] == method], x="sparsity", y="score", hue="seed", ax=ax)
        ax.set(xlabel="fraction removed", ylabel="score", title=method)
    plots.legend_outside(fig, title="seed")
    return fig, axes


def test_check_style_passes_a_figure_drawn_the_books_way_and_style_sets_the_fonts():
    fig, axes = _styled_curves()
    assert plots.check_style(fig) == []
    assert not any(ax.get_legend() for ax in axes.flat) and len(fig.legends) == 1  # merged into one legend
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["0", "1", "2", "3"]
    assert min(plots.FONT_PT.values()) >= plots.MIN_FONT_PT / 0.9 and plt.rcParams["savefig.dpi"] == plots.SAVE_DPI
    plt.rcdefaults()


@pytest.mark.parametrize("where", ["right", "below"])
def test_legend_outside_moves_a_covering_legend_off_the_data(where):
    plots.set_style()
    ax = plots.correlation_bars(_tidy(), x="method", y="score", hue="sparsity")
    ax.set(xlabel="method", ylabel="Spearman correlation")
    ax.legend(loc="center", title="sparsity")  # over the bars
    assert any("legend" in p and "overlaps" in p for p in plots.check_style(ax.figure))
    plots.legend_outside(ax, where=where)
    assert plots.check_style(ax.figure) == []
    legend = ax.get_legend() if where == "right" else ax.figure.legends[0]
    assert [t.get_text() for t in legend.get_texts()] == ["0.1", "0.5", "0.9"] and legend.get_title().get_text() == (
        "sparsity")
    with pytest.raises(ValueError, match="where"):
        plots.legend_outside(ax, where="inside")
    with pytest.raises(ValueError, match="no legend"):
        plots.legend_outside(plt.subplots()[1])
    plt.rcdefaults()


def test_legend_outside_lays_out_without_the_panels_own_legends():
    # three bar panels, each with seaborn's legend of long labels: laid out before the legends move, the panels are
    # narrowed by legends that then leave; with tight_layout=True they take the width the legends gave back
    def panel_widths(tight: bool) -> list[float]:
        plots.set_style()
        fig, axes = plots.panels(1, 3, height=3.0, sharey=True)
        for ax in axes[0]:
            df = _tidy().assign(method=lambda d: d["method"].map({"fid": "a long method name", "rfid": "another long name", "ffid": "a third name"}))
            plots.correlation_bars(df, x="sparsity", y="score", hue="method", ax=ax)
        if not tight:
            fig.tight_layout()
        plots.legend_outside(fig, where="below", tight_layout=tight)
        widths = [ax.get_position().width for ax in axes[0]]
        right = axes[0][-1].get_position().x1  # laid out, the last panel reaches the figure's right edge
        assert len(fig.legends) == 1 and not any(ax.get_legend() for ax in axes[0])
        plt.close(fig)
        return widths, right

    (before, _), (after, right) = panel_widths(False), panel_widths(True)
    assert min(after) > 1.1 * max(before) and right > 0.95, (before, after, right)
    plt.rcdefaults()


def test_check_style_finds_small_fonts_after_shrinking_to_the_column():
    plots.set_style()
    fig, ax = plt.subplots(figsize=(6.0, 3.0))
    ax.plot([0, 1], [0, 1])
    ax.set(xlabel="fraction removed", ylabel="score")
    assert plots.check_style(fig) == []  # 6 in at 120 dpi fits the 772 px column: 10 pt ticks stay 10 pt
    assert plots.check_style(fig, dpi=240) == []  # twice the pixels, shrunk by half: the same size as seen
    fig.set_size_inches(12.0, 3.0)  # about 1,200 px as saved (tight), shrunk by about 0.64: 10 pt ticks at 6.4 pt
    problems = plots.check_style(fig)
    assert problems and all(p.startswith("font") for p in problems)
    assert any("10 pt × 0.6" in p for p in problems)
    fig.set_size_inches(6.0, 3.0)
    ax.set_title("tiny", fontsize=7)
    assert [p.split(" pt as")[0] for p in plots.check_style(fig)] == ["font 7.0"]
    assert plots.check_style(fig, min_font_pt=7) == []
    plt.rcdefaults()


@pytest.mark.parametrize("raw", ["morf_vs_gt", "n_samples", "value", "mean of n_samples"])
def test_check_style_finds_raw_column_names(raw):
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.plot([0, 1], [0, 1], label="integrated gradients")
    ax.set(xlabel="fraction removed", ylabel="score")
    plots.legend_outside(ax)
    assert plots.check_style(fig) == []
    ax.set_ylabel(raw)
    assert plots.check_style(fig) == [f"raw column name {raw!r} as a label: say it in words (plots.label)"]
    ax.set_ylabel(plots.label(raw) if raw != "value" else "score")  # a placeholder has no words: name the score
    assert plots.check_style(fig) == []
    ax.get_legend().get_texts()[0].set_text("integrated_gradients")  # a raw category in the legend
    assert len(plots.check_style(fig)) == 1
    assert plots.label("morf_vs_gt") == "MoRF vs ground truth" and plots.label("new_column") == "new column"


def test_check_style_counts_panels_not_colour_bars_twins_or_empty_slots():
    fig, axes = plt.subplots(4, 4, figsize=(6.4, 6.4))
    for ax in axes.flat:
        ax.plot([0, 1], [0, 1])
        ax.tick_params(labelsize=10)
    assert plots.check_style(fig) == ["16 panels in one figure (more than 8): split it or show fewer"]
    assert plots.check_style(fig, max_panels=16) == []
    fig, axes = plt.subplots(2, 4, figsize=(6.4, 3.2))
    for ax in axes.flat:
        ax.set_axis_off()
    image = axes[0, 0].imshow(np.eye(3))
    fig.colorbar(image, ax=axes[0, 0])
    axes[0, 1].plot([0, 1], [0, 1])
    axes[0, 1].twinx().plot([0, 1], [1, 0])
    assert plots.check_style(fig, max_panels=2) == []  # the image and the plot; not the colour bar or the twin
    with pytest.raises(ValueError, match="9 panels"):
        plots.panels(3, 3)
    with pytest.raises(TypeError, match="fig"):
        plots.check_style(axes[0, 0])


def test_library_figures_pass_the_style():
    plots.set_style()
    ax = plots.curves(_tidy(), x="sparsity", y="score", hue="method")
    ax.set(xlabel="fraction removed", ylabel="score")
    plots.legend_outside(ax)
    assert plots.check_style(ax.figure) == []
    images = torch.rand(8, 3, 6, 6, generator=torch.Generator().manual_seed(2))
    fig = plots.image_grid(images, titles=[f"IG, label {i}" for i in range(8)], attributions=torch.rand(8, 6, 6))
    assert plots.check_style(fig) == []  # 8 thumbnails, axes off: their hidden tick labels are not texts
    assert fig.get_size_inches()[0] <= plots.WIDTH_IN
    plt.rcdefaults()


def test_radar_uses_the_colour_blind_palette_and_its_legend_goes_outside():
    plots.set_style()
    methods = [f"method {i}" for i in range(12)] + ["Random"]
    rng = np.random.default_rng(3)
    values = pd.DataFrame(rng.uniform(size=(13, 5)), index=methods, columns=[f"metric {j}" for j in range(5)])
    fig, axes = plots.panels(1, 2, height=3.0, legend="right", subplot_kw={"projection": "polar"})
    for ax in axes[0]:
        plots.radar(values, ax=ax, title="setting")
    palette = [matplotlib.colors.to_hex(c) for c in plots.sns.color_palette(plots.PALETTE)]
    lines = axes[0, 0].lines
    assert [matplotlib.colors.to_hex(line.get_color()) for line in lines[:10]] == palette
    assert lines[10].get_linestyle() == "--" and matplotlib.colors.to_hex(lines[12].get_color()) == "#000000"
    plots.legend_outside(fig)
    assert plots.check_style(fig) == []
    assert len(fig.legends[0].get_texts()) == 13
    plt.rcdefaults()


def test_check_style_finds_crowded_tick_labels_and_a_legend_on_an_axis_label():
    plots.set_style()
    fig, ax = plt.subplots(figsize=(3.0, 2.5))
    ax.bar(["Comprehensiveness", "LOdds", "Sufficiency"], [1, 2, 3], label="mean")
    ax.set(xlabel="metric", ylabel="score")
    assert [p.split(" overlap")[0] for p in plots.check_style(fig)] == [
        "tick labels 'Comprehensiveness' and 'LOdds'"]
    ax.tick_params(axis="x", labelrotation=60)
    fig.tight_layout()
    fig.legend(loc="lower center", bbox_to_anchor=(0.5, 0.0))  # on the figure's bottom edge, over "metric"
    assert [p.split(":")[0] for p in plots.check_style(fig)] == ["legend 'mean' covers the label 'metric'"]
    plots.legend_outside(fig, where="below")  # below everything drawn, the rotated tick labels included
    assert plots.check_style(fig) == []
    plt.rcdefaults()


def test_curves_per_level_draws_one_line_per_noise_level_in_each_method_and_curve_panel():
    import itertools

    rows = [{"method": m, "curve": c, "level": lv, "xi": xi, "score": xi * lv + (c == "−")}
            for m, c, lv, xi in itertools.product(["Fidelity", "F-Fidelity"], ["+", "−"], [0.1, 0.5, 0.9],
                                                  [0.0, 0.5, 1.0])]
    fig = plots.curves_per_level(pd.DataFrame(rows), methods=["Fidelity", "F-Fidelity"], title="GradCAM")
    axes = fig.axes
    assert [ax.get_title() for ax in axes] == ["GradCAM Fidelity +", "GradCAM Fidelity −", "GradCAM F-Fidelity +",
                                               "GradCAM F-Fidelity −"]
    drawn = [[line for line in ax.get_lines() if len(line.get_xdata())] for ax in axes]  # not the legend's handles
    assert [len(lines) for lines in drawn] == [3, 3, 3, 3]  # ξ = 0, 0.5, 1 in every panel
    assert list(drawn[0][2].get_ydata()) == pytest.approx([0.1, 0.5, 0.9])  # ξ = 1 on "Fidelity +": score = level
    assert list(drawn[1][0].get_ydata()) == pytest.approx([1.0, 1.0, 1.0])  # ξ = 0 on "Fidelity −": 1
    plt.close(fig)


def test_heatmap_overlay_colour_bar_on_a_shared_scale():
    plots.set_style()
    fig, axes = plots.panels(1, 2)
    for ax in axes.flat:
        plots.heatmap_overlay(torch.rand(1, 8, 8), torch.rand(8, 8), ax=ax, vmin=0.0, vmax=1.0, colorbar="π")
    images = [ax.images[-1] for ax in axes.flat]
    assert all(im.colorbar is not None for im in images)
    assert all(im.get_clim() == (0.0, 1.0) for im in images)
    assert sum(hasattr(ax, "_colorbar") for ax in fig.axes) == 2
    assert plots.check_style(fig) == []
    plain = plots.heatmap_overlay(torch.rand(8, 8), torch.rand(8, 8))  # default: no colour bar, as before
    assert plain.images[-1].colorbar is None


def test_key_palette_strong_key_methods_grey_dashed_reference_muted_others():
    names = ["T-y", "T-p", "Grad", "GC", "RISE", "Random"]
    styles = plots.key_palette(names, key=("T-y", "T-p"), best=["GC"])
    assert set(styles) == set(names)
    strong = [styles[n]["color"] for n in ("T-y", "T-p", "GC")]
    assert len(set(strong)) == 3
    assert styles["Random"]["linestyle"] == "--" and styles["Random"]["color"] == "0.35"
    assert styles["T-y"]["linewidth"] > styles["Grad"]["linewidth"]
    assert styles["Grad"]["color"] not in strong and styles["RISE"]["color"] not in strong
    with pytest.raises(TypeError):
        plots.key_palette("T-y")


def test_interval_dots_one_row_per_method_in_order():
    plots.set_style()
    df = pd.DataFrame({"method": ["a", "b", "Random"], "mean": [0.5, 0.2, 0.0], "low": [0.4, 0.1, -0.1],
                       "high": [0.6, 0.3, 0.1]})
    ax = plots.interval_dots(df, y="method", x="mean", low="low", high="high", order=["Random", "a", "b"], zero=0.0)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["Random", "a", "b"]
    assert ax.get_ylim()[0] > ax.get_ylim()[1]  # the first method at the top
    assert plots.check_style(ax.figure) == []
    with pytest.raises(ValueError, match="not a column"):
        plots.interval_dots(df, y="method", x="nope", low="low", high="high")


def test_readable_words_yes_no_and_rounded_numbers():
    df = pd.DataFrame({"mean_U": [45.692936, 1.0], "testable": [True, False], "n_epochs": [3, 4]})
    styled = plots.readable(df, names={"mean_U": "mean uncertainty U"})
    assert list(styled.data.columns) == ["mean uncertainty U", "testable", "n epochs"]
    assert list(styled.data["testable"]) == ["yes", "no"]
    html = styled.to_html()
    assert "45.693" in html and "45.692936" not in html
    assert list(df.columns) == ["mean_U", "testable", "n_epochs"]  # the frame itself is unchanged
    with pytest.raises(TypeError):
        plots.readable([1, 2])


def test_map_columns_and_image_grid_share_one_colour_bar_over_maps_scaled_to_their_own_range():
    from matplotlib.colors import Normalize

    from faithlab_study.artifacts import panel_grid

    images = np.random.default_rng(0).random((2, 3, 8, 8))
    maps = {"a": np.arange(128.0).reshape(2, 8, 8), "b": -np.ones((2, 8, 8))}  # a ramp and a constant map
    fig = plots.map_columns(images, maps, colorbar="attribution, scaled per map (0–1)")
    bars = [ax for ax in fig.axes if hasattr(ax, "_colorbar")]
    assert len(bars) == 1 and bars[0].get_ylabel() == "attribution, scaled per map (0–1)"
    assert panel_grid(fig) == (2, 3)  # the colour bar is not a panel
    ramp = fig.axes[1].images[-1]  # row 0, column "a": the map on top of the image
    assert ramp.get_array().min() == 0 and ramp.get_array().max() == 1 and ramp.norm.vmax == 1
    assert fig.axes[2].images[-1].get_array().max() == 0  # a constant map shows as the scale's low end
    plt.close(fig)
    fig = plots.image_grid(list(images), attributions=list(maps["a"]), colorbar="scaled")
    assert sum(hasattr(ax, "_colorbar") for ax in fig.axes) == 1
    plt.close(fig)
    fig = plots.map_columns(images, maps)  # without colorbar: each map on its own scale, no bar
    assert not any(hasattr(ax, "_colorbar") for ax in fig.axes)
    assert isinstance(fig.axes[1].images[-1].norm, Normalize) and fig.axes[1].images[-1].norm.vmax == 63
    plt.close(fig)


def test_box_panels_one_panel_per_group_in_order_with_boxes_of_each_hue():
    rng = np.random.default_rng(1)
    df = pd.DataFrame([{"model": m, "method": k, "alteration": a, "Fid": rng.uniform()}
                       for m in ("VGG", "ResNet") for k in ("IG", "CAM", "Random") for a in ("none", "SG")
                       for _ in range(5)])
    fig = plots.box_panels(df, x="method", y="Fid", hue="alteration", by="model", hue_order=["none", "SG"],
                           title="Fid", ylim=(0, 1))
    axes = [ax for ax in fig.axes if ax.get_visible() and ax.has_data()]
    assert [ax.get_title() for ax in axes] == ["Fid: VGG", "Fid: ResNet"]  # order of appearance, not sorted
    assert all(ax.get_ylim() == (0, 1) for ax in axes)
    assert [t.get_text() for t in axes[-1].get_xticklabels()] == ["IG", "CAM", "Random"]
    assert len(fig.legends) == 1 and [t.get_text() for t in fig.legends[0].get_texts()] == ["none", "SG"]
    plots.check_style(fig)
    with pytest.raises(ValueError, match="by='arch'"):
        plots.box_panels(df, x="method", y="Fid", hue="alteration", by="arch")


@pytest.mark.parametrize(("later", "extend"), [(0.5, "neither"), (2.0, "max"), (-1.0, "min")])
def test_strip_and_curves_strip_on_the_first_images_scale_and_one_panel_per_kind(later, extend):
    first = torch.linspace(0, 1, 64).reshape(8, 8)
    images = [first, torch.full((8, 8), later)]
    df = pd.DataFrame([{"distance": d, "step": s, "value": s * (i + 1)}
                       for i, d in enumerate(("l1", "l2", "ssim", "dice")) for s in range(4)])
    fig = plots.strip_and_curves(df, images, x="step", panel="distance", order=["l2", "l1", "dice", "ssim"],
                                 titles=["a", "b"], xlabel="step", value_label="map value",
                                 names={"l2": "L2", "l1": "L1"})
    strip = fig.axes[0]
    drawn = strip.images[0]
    assert drawn.get_clim() == (0.0, 1.0)
    assert drawn.get_array().shape == (8, 8 + 1 + 8)  # the two images side by side, one column of gap
    assert [t.get_text() for t in strip.get_xticklabels()] == ["a", "b"]
    bar = next(ax for ax in fig.axes if ax.get_ylabel() == "map value")
    assert bar._colorbar.extend == extend
    panels_drawn = [ax for ax in fig.axes[1:] if ax.lines]
    assert [ax.get_title() for ax in panels_drawn] == ["L2", "L1", "dice", "ssim"]
    assert list(panels_drawn[0].lines[0].get_ydata()) == [0, 2, 4, 6]  # l2's values (i = 1): the panel's own rows
    assert sum(not ax.axison for ax in fig.axes) == 2  # 4 panels on 2 rows of 3: two empty slots hidden
    assert [ax.get_ylabel() for ax in panels_drawn] == [plots.label("value"), "", "", plots.label("value")]
