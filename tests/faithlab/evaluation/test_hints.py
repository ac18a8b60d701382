"""Degenerate results explained (issue 31): :mod:`faithlab.evaluation.hints` on frames built by hand, one per
cause, on healthy frames (no message), and on real ``fl.evaluate`` frames (a model that gets every label wrong, a
constant map, a model that ignores its input)."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest
import torch

import faithlab as fl
from faithlab.evaluation import hints
from oracles import small_cnn

LABELS = {"fid+": "Fid+", "fid-": "Fid−", "auc_accuracy": "AUC", "fewclass_fid": "Few-class Fid", "saco": "SaCo",
          "mu_fidelity": "μF", "aopc": "AOPC", "le-mo": "ΣLeRF − ΣMoRF"}


def _frame(scores: dict[tuple[str, str], list[float]]) -> pd.DataFrame:
    """A tidy frame like fl.evaluate's: {(metric, explainer): one score per sample} (+ a dataset-level row)."""
    rows = [{"explainer": e, "sample": i, "metric": m, "label": LABELS[m], "score": v}
            for (m, e), values in scores.items() for i, v in enumerate(values)]
    explainers = sorted({e for _, e in scores})
    rows += [{"explainer": e, "sample": pd.NA, "metric": "mege", "label": "MeGe", "score": 0.7} for e in explainers]
    frame = pd.DataFrame(rows)
    frame["sample"] = frame["sample"].astype("Int64")
    return frame


def _varied(seed: int, n: int = 5, lo: float = 0.0, hi: float = 1.0) -> list[float]:
    g = torch.Generator().manual_seed(seed)
    return (lo + (hi - lo) * torch.rand(n, generator=g, dtype=torch.float64)).tolist()


def _healthy() -> dict[tuple[str, str], list[float]]:
    return {(m, e): _varied(i * 7 + j, lo=-0.2) for i, m in enumerate(LABELS) for j, e in enumerate(("A", "B"))}


ALL = torch.ones(5, dtype=torch.bool)
NONE = torch.zeros(5, dtype=torch.bool)
MIXED = torch.tensor([True, False, True, True, False])


def test_a_healthy_frame_gets_no_message():
    frame = _frame(_healthy())
    assert hints.degenerate(frame) == []
    assert hints.degenerate(frame, correct=MIXED, constant={"A": MIXED, "B": NONE}) == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert hints.warn_degenerate(frame, correct=ALL) == []


def test_two_equal_scores_are_not_a_pattern():
    scores = _healthy()
    scores["saco", "A"] = [0.3, 0.3]  # two samples: too few for the generic rule
    scores = {k: v[:2] for k, v in scores.items()}
    assert hints.degenerate(_frame(scores)) == []
    scores = {k: v + [0.5] for k, v in scores.items()}
    scores["saco", "A"] = [0.3, 0.3, 0.3]
    (message,) = hints.degenerate(_frame(scores))
    assert message.startswith("SaCo is 0.3 for all 3 samples of explainer 'A', for no cause faithlab recognises")


def test_accuracy_forms_when_no_prediction_is_correct():
    scores = _healthy()
    for m in ("fid+", "fid-", "auc_accuracy"):
        for e in ("A", "B"):
            scores[m, e] = [0.0] * 5
    scores["fid-", "B"] = [0.0, -0.2, 0.0, 0.0, -0.4]  # a removal that happens to produce the label
    frame = _frame(scores)
    (message,) = hints.degenerate(frame, correct=NONE)
    assert message.startswith("Fid+ (0), Fid− (-0.4 to 0), AUC (0) are degenerate across the samples of "
                              "explainers 'A', 'B'")
    assert "predicts none of the 5 labels correctly" in message and "y=None" in message
    # the same scores with some correct predictions: Fid± at 0 means no removal changed a prediction's
    # correctness; the AUC constant for no known cause
    unmoved, generic = hints.degenerate(frame, correct=MIXED)
    assert unmoved.startswith("Fid+ (0), Fid− (0) are constant across the samples of explainers 'A', 'B': no "
                              "removal changed whether any prediction equals its label")
    assert generic.startswith("AUC is 0 for all 5 samples of explainers 'A', 'B', for no cause faithlab recognises")


def test_accuracy_forms_when_every_prediction_is_correct_and_nothing_moves():
    scores = _healthy()
    scores["fid+", "A"] = scores["fid+", "B"] = [0.0] * 5
    (message,) = hints.degenerate(_frame(scores), correct=ALL)
    assert message.startswith("Fid+ (0) is constant across the samples of explainers 'A', 'B': every prediction "
                              "is correct and no removal changed one")
    scores["fid+", "A"] = scores["fid+", "B"] = [1.0] * 5  # every removal flipped: not the no-change value
    (message,) = hints.degenerate(_frame(scores), correct=ALL)
    assert message.startswith("Fid+ is 1 for all 5 samples of explainers 'A', 'B', for no cause")


@pytest.mark.parametrize("n_classes", [2, 3, 10, 1000])
def test_fewclass_fid_of_flat_curves(n_classes):
    scores = _healthy()
    flat = n_classes / (2 * n_classes - 1)
    scores["fewclass_fid", "A"] = scores["fewclass_fid", "B"] = [flat] * 5
    (message,) = hints.degenerate(_frame(scores))
    assert message.startswith(f"Few-class Fid ({flat:.4g}) is constant across the samples of explainers 'A', 'B': "
                              f"the value of flat MIF and LIF curves, N/(2N − 1) for N = {n_classes} classes")
    assert "never changes the model's output" in message


def test_a_constant_fewclass_fid_of_another_value_has_no_known_cause():
    scores = _healthy()
    scores["fewclass_fid", "A"] = [0.8] * 5
    (message,) = hints.degenerate(_frame(scores))
    assert message.startswith("Few-class Fid is 0.8 for all 5 samples of explainer 'A', for no cause")


def test_an_explainer_whose_every_map_is_constant():
    scores = _healthy()
    scores["saco", "B"] = [0.0] * 5
    scores["mu_fidelity", "B"] = [float("nan")] * 5
    frame = _frame(scores)
    (message,) = hints.degenerate(frame, constant={"A": MIXED, "B": ALL})
    assert message.startswith("Every map of explainer 'B' is constant over its units: it defines no ranking")
    assert "SaCo (0)" in message and "μF (NaN)" in message and "Fid+ (" in message
    assert "'A'" not in message
    # without the flags, the same scores: μF NaN for B only (its maps give every subset the same sum), SaCo
    # constant for no known cause
    mu, saco = hints.degenerate(frame)
    assert mu.startswith("μF is NaN for every sample of explainer 'B'") and "the maps are constant" in mu
    assert saco.startswith("SaCo is 0 for all 5 samples of explainer 'B', for no cause")


def test_mu_fidelity_nan_means_the_output_does_not_move():
    scores = _healthy()
    scores["mu_fidelity", "A"] = scores["mu_fidelity", "B"] = [float("nan")] * 5
    scores["aopc", "A"] = scores["aopc", "B"] = [0.0] * 5
    (message,) = hints.degenerate(_frame(scores))
    assert message.startswith("μF is NaN for every sample of explainers 'A', 'B' (and AOPC (0) are constant")
    assert "the model's output does not move when features are removed" in message


def test_a_metric_nan_for_every_sample():
    scores = _healthy()
    scores["saco", "B"] = [float("nan")] * 5
    (message,) = hints.degenerate(_frame(scores))
    assert message.startswith("SaCo is NaN for every sample of explainer 'B': no score could be computed")


def test_warn_degenerate_issues_one_warning_per_message():
    scores = _healthy()
    scores["saco", "B"] = [float("nan")] * 5
    scores["aopc", "A"] = [0.25] * 5
    with pytest.warns(hints.DegenerateResultWarning) as caught:
        messages = hints.warn_degenerate(_frame(scores))
    assert len(messages) == 2 and [str(w.message) for w in caught] == messages
    assert issubclass(hints.DegenerateResultWarning, UserWarning)


def test_bad_arguments_are_refused_by_name():
    frame = _frame(_healthy())
    with pytest.raises(TypeError, match="^frame must be the pandas DataFrame"):
        hints.degenerate(frame.to_dict())
    with pytest.raises(ValueError, match=r"^frame must have the columns .*'score'"):
        hints.degenerate(frame.drop(columns="score"))
    with pytest.raises(ValueError, match=r"^correct must hold one flag per sample of frame \(5\), got 4"):
        hints.degenerate(frame, correct=ALL[:4])
    with pytest.raises(ValueError, match="^correct must be a 1-D bool tensor"):
        hints.degenerate(frame, correct=ALL.long())
    with pytest.raises(TypeError, match="^constant must map explainer names"):
        hints.degenerate(frame, constant=[ALL])
    with pytest.raises(ValueError, match=r"^constant\['A'\] must be a 1-D bool tensor"):
        hints.degenerate(frame, constant={"A": ALL[None]})
    dataset_only = frame[frame["sample"].isna()]  # ReCo/MeGe alone: one row per explainer, nothing per sample
    assert hints.degenerate(dataset_only, correct=NONE, constant={"A": ALL}) == []


# --- real fl.evaluate frames ---------------------------------------------------------------------------------
METRICS = ["fid+", "fid-", "rfid+", "fewclass_fid", "saco", "auc_accuracy", "aopc", "mu_fidelity", "le-mo"]


def _evaluate(model, y, maps):
    x = torch.rand(6, 3, 8, 8, generator=torch.Generator().manual_seed(1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the metrics' own ConstantMapWarning
        return fl.evaluate(model, x, y, maps, metrics=METRICS, progress=False, n_samples=5, n_subsets=20), x


def _maps():
    g = torch.Generator().manual_seed(3)
    return {"A": torch.rand(6, 1, 8, 8, generator=g), "B": torch.randn(6, 3, 8, 8, generator=g)}


@pytest.fixture(scope="module")
def cnn():
    torch.manual_seed(0)
    return small_cnn(3, 8, 3)


def test_a_real_healthy_frame_gets_no_message(cnn):
    x = torch.rand(6, 3, 8, 8, generator=torch.Generator().manual_seed(1))
    y = cnn(x).argmax(1)
    frame, _ = _evaluate(cnn, y, _maps())
    assert hints.degenerate(frame, correct=torch.ones(6, dtype=torch.bool),
                            constant={"A": torch.zeros(6, dtype=torch.bool),
                                      "B": torch.zeros(6, dtype=torch.bool)}) == []


def test_a_real_model_that_gets_every_label_wrong(cnn):
    x = torch.rand(6, 3, 8, 8, generator=torch.Generator().manual_seed(1))
    wrong = (cnn(x).argmax(1) + 1) % 3
    frame, _ = _evaluate(cnn, wrong, _maps())
    (message,) = hints.degenerate(frame, correct=torch.zeros(6, dtype=torch.bool))
    assert message.startswith("Fid+ (") and "Fid− (" in message and "RFid+ (" in message and "AUC (" in message
    assert "predicts none of the 6 labels correctly" in message


def test_a_real_constant_map(cnn):
    x = torch.rand(6, 3, 8, 8, generator=torch.Generator().manual_seed(1))
    y = cnn(x).argmax(1)
    maps = {"A": _maps()["A"], "Z": torch.zeros(6, 1, 8, 8)}
    frame, _ = _evaluate(cnn, y, maps)
    constant = {"A": torch.zeros(6, dtype=torch.bool), "Z": torch.ones(6, dtype=torch.bool)}
    (message,) = hints.degenerate(frame, correct=torch.ones(6, dtype=torch.bool), constant=constant)
    assert message.startswith("Every map of explainer 'Z' is constant") and "SaCo (0)" in message
    assert "μF (NaN)" in message


class _Ignores(torch.nn.Module):
    """Fixed logits whatever the input."""

    def __init__(self):
        super().__init__()
        self.bias = torch.nn.Parameter(torch.tensor([2.0, 0.5, -1.0]))

    def forward(self, z):
        return self.bias.expand(z.shape[0], -1) + 0 * z.flatten(1)[:, :1]


def test_a_real_model_that_ignores_its_input():
    frame, _ = _evaluate(_Ignores().eval(), torch.zeros(6, dtype=torch.int64), _maps())
    with pytest.warns(hints.DegenerateResultWarning):
        messages = hints.warn_degenerate(frame, correct=torch.ones(6, dtype=torch.bool))
    assert len(messages) == 3
    accuracy, fewclass, mu = messages
    assert accuracy.startswith("Fid+ (0), Fid− (0), RFid+ (0), AUC (1) are constant") and "no removal" in accuracy
    assert fewclass.startswith("Few-class Fid (0.6) is constant") and "N = 3 classes" in fewclass
    assert mu.startswith("μF is NaN for every sample of explainers 'A', 'B' (and SaCo (")
    assert "AOPC (0)" in mu and "ΣLeRF − ΣMoRF (0)" in mu
