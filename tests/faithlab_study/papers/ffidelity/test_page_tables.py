"""What the F-Fidelity notebooks show of their results: the models' labels and glue keys of the series and text
study, and the per-setting tables of the sensitivity study (means and stds computed by hand)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

import faithlab as fl
import faithlab_study as fs

F = fs.papers.ffidelity
NAMES = fs.recipes.DISPLAY_NAMES


def test_a_text_models_label_names_its_removal_and_other_models_keep_their_name():
    st = F.SeriesTextModels()
    labels = {case: st.label(case[0], case[1], case[3]) for case in st.cases()}
    assert len(set(labels.values())) == len(labels)  # every model pair of the study is told apart
    for (domain, name, _, reference), label in labels.items():
        if domain == "text":
            removal = next(k for k, v in st.text_removals.items() if v == reference)
            assert label == f"{NAMES[name]} ({removal})"
        else:
            assert label == NAMES[name]
    assert st.label("images", "resnet9", "zero") == NAMES["resnet9"]
    with pytest.raises(ValueError, match="reference must be one of"):
        st.label("text", st.text_models[0], "blur")


@pytest.mark.parametrize(("label", "key"), [("CNN-1D", "cnn1d"), ("LSTM (pad deletion)", "lstm_pad"),
                                            ("Transformer (zero embedding)", "transformer"), ("ViT-S/4", "vits4")])
def test_glue_key_is_the_first_word_in_letters_and_digits_with_pad_marked(label, key):
    assert F.glue_key(label) == key


def test_glue_keys_of_the_series_and_text_models_are_unique():
    st = F.SeriesTextModels()
    keys = [F.glue_key(st.label(d, n, r)) for d, n, _, r in st.cases()]
    assert len(set(keys)) == len(keys)


def _units() -> pd.DataFrame:
    keys = list(fl.metrics.DIRECTIONS)
    rows = [("beta", 0.25, (0.5, -0.5, 0.1)), ("beta", 0.25, (0.7, -0.1, float("nan"))),
            ("beta", 0.05, (0.2, 0.2, 0.2)), ("n_samples", 10, (-1.0, 1.0, 0.0))]
    return pd.DataFrame([{"varied": v, "value": x, **dict(zip(keys, c))} for v, x, c in rows])


def test_setting_means_by_hand_in_order_of_appearance_nan_left_out():
    table = F.setting_means(_units())
    first, second, third = fl.metrics.DIRECTIONS
    assert list(table.columns) == ["varied", "value", first, f"{first} std", second, f"{second} std", third,
                                   f"{third} std"]
    assert list(zip(table["varied"], table["value"])) == [("beta", 0.25), ("beta", 0.05), ("n_samples", 10)]
    row = table.iloc[0]
    assert row[first] == pytest.approx(0.6) and row[f"{first} std"] == pytest.approx(0.1)  # population std
    assert row[second] == pytest.approx(-0.3) and row[f"{second} std"] == pytest.approx(0.2)
    assert row[third] == pytest.approx(0.1) and row[f"{third} std"] == 0.0  # the NaN row is left out
    assert table.iloc[2][f"{first} std"] == 0.0 and table.iloc[2][first] == -1.0


def test_setting_table_writes_the_setting_as_text_and_labels_the_correlations():
    shown = F.setting_table(F.setting_means(_units()))
    assert list(shown["setting"]) == ["β = 0.25", "β = 0.05", "N = 10"]
    labels = F.CORRELATION_LABELS
    assert list(shown.columns) == ["setting", *(c for k in fl.metrics.DIRECTIONS
                                                for c in (labels[k], f"{labels[k]} std"))]
    other = pd.DataFrame({"varied": ["alpha"], "value": [0.5], "FFid+ (ξ = 0)": [0.25]})
    assert F.setting_table(other).to_dict("list") == {"setting": ["α = 0.5"], "FFid+ (ξ = 0)": [0.25]}
    assert not math.isnan(shown.iloc[0, 1])
