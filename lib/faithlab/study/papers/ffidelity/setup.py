"""F-Fidelity's set-up table, paper against ours (spec §1.4–1.12): :data:`SETUP`, read from the executed notebooks'
parameters."""

from __future__ import annotations

from collections.abc import Mapping

from faithlab.study import recipes
from faithlab.study.papers.ffidelity.series_text import SeriesTextModels
from faithlab.study.papers.ffidelity.study import CanvasModels
from faithlab.study.papers.setup import Setting


def _grid(values, percent: bool = False) -> str:
    """A set-up table's summary of a grid: ``"first–last, n levels"`` (in percent with ``percent``)."""
    values = sorted(values)
    lo, hi = (100 * values[0], 100 * values[-1]) if percent else (values[0], values[-1])
    return f"{lo:g}–{hi:g}{' %' if percent else ''}, {len(values)} levels"


def _series_text(params: Mapping) -> SeriesTextModels:
    """The series/text models of a notebook's parameters (its ``series_text_models`` overrides)."""
    return SeriesTextModels(**params["series_text_models"])


def _canvas(params: Mapping) -> CanvasModels:
    """The image models of a notebook's parameters (its ``canvas_models`` overrides)."""
    return CanvasModels(**params["canvas_models"])


def _second(params: Mapping) -> CanvasModels:
    """The image models of the second data set (Table 2): ``canvas_models`` with the notebook's ``second``."""
    return CanvasModels(**{**params["canvas_models"], **params["second"]})


def _colours(canvas: CanvasModels) -> str:
    """How a setting's canvases are coloured, in a set-up table."""
    return "saturated-colour" if canvas.saturated else "coloured" if canvas.color else "grey"


def _model(name: str, width) -> str:
    """A model in a set-up table: its display name and width (``CNN (width 32)``)."""
    return f"{recipes.DISPLAY_NAMES.get(name, name)} (width {width:g})"


SETUP: tuple[Setting, ...] = (
    Setting("image data (Table 1)", "CIFAR-100", "ffidelity/images_ranking",
            lambda p: f"{_colours(_canvas(p))} digit canvases, {_canvas(p).image_size} px, r = {_canvas(p).r:g}, "
                      f"{'all' if _canvas(p).n_train is None else format(_canvas(p).n_train, ',')} train"),
    Setting("second image data (Table 2)", "Tiny-ImageNet (64 px, 200 classes)", "ffidelity/images_ranking",
            lambda p: f"{_colours(_second(p))} canvases, {_second(p).image_size} px, r = {_second(p).r:g}"
                      + (f", {_second(p).clutter} fragments" if _second(p).clutter else "")
                      if p.get("second") else "not run"),
    Setting("image model; epochs: training, fine-tuning, ROAR", "ResNet-9; 100, 100, 100", "ffidelity/images_ranking",
            lambda p: f"{_model(_canvas(p).model_name, _canvas(p).width)}; {_canvas(p).n_epochs}, "
                      f"{_canvas(p).n_finetune_epochs}, {_canvas(p).n_roar_epochs}"),
    Setting("explainers", "SG-SQ over IG (10 samples), GradCAM", "ffidelity/images_ranking",
            lambda p: ", ".join(f"SG-SQ over IG ({p['sg_samples']} samples, {p['ig_steps']} steps)"
                                if e == "sg_sq_ig" else {"gradcam": "GradCAM"}.get(e, e) for e in p["explainers"])),
    Setting("cap β, removal rate α, masks N", "β = 0.1, α+ = α− = 0.5, N = 50", "ffidelity/images_ranking",
            "β = {beta}, α+ = α− = {alpha}, N = {n_samples}"),
    Setting("sparsity grid; noise levels ξ, degradation seeds", "5–95 %, 19 levels; ξ 0–1, 6 levels; 5 seeds",
            "ffidelity/images_ranking",
            lambda p: f"{_grid(p['sparsity'], percent=True)}; ξ {_grid(p['noise_levels'])}; {p['n_seeds']} seeds"),
    Setting("evaluation images; trained replicas", "10,000 (CIFAR-100), 2,000 (Tiny-ImageNet); 1",
            "ffidelity/images_ranking",
            lambda p: f"{p['n_test']:,} test canvases; {p.get('replicas', 1)} replicas per setting"),
    Setting("trained replicas (series/text, robustness, size)", "1", "ffidelity/series_text",
            lambda p: f"{p.get('replicas', 1)} per model"),
    Setting("series, text data (Tables 3–4, 6–7)", "PAM, Boiler; SST2, BoolQ", "ffidelity/series_text",
            lambda p: f"synthetic series of {_series_text(p).ts_length} steps; "
                      f"{_series_text(p).text_length}-token sentences"),
    Setting("series, text models", "Bi-LSTM, CNN; LSTM, Transformer", "ffidelity/series_text",
            lambda p: "; ".join(", ".join(recipes.DISPLAY_NAMES.get(m, m) for m in names)
                                for names in (_series_text(p).ts_models, _series_text(p).text_models))),
    Setting("plateau (Fig. 4): r × β", "colored-MNIST, 5 r × 3 β", "ffidelity/size_plateau",
            lambda p: f"{'saturated-colour' if p['color'] and p.get('palette') == 'saturated' else 'coloured' if p['color'] else 'grey'} "
                      f"digit canvases, {len(p['rs'])} r × {len(p['betas'])} β, {p.get('replicas', 1)} replicas"),
    Setting("sensitivity grids (Tables 24–26)", "N 10–150, β 0.05–0.25, α 0.2–0.8", "ffidelity/sensitivity",
            lambda p: ", ".join(f"{name} {min(p['grids'][key]):g}–{max(p['grids'][key]):g}"
                                for name, key in (("N", "n_samples"), ("β", "beta"), ("α", "alpha")))),
)
"""The chapter's set-up table, paper (spec §1.4–1.12) against ours (the executed notebooks' parameters)."""

