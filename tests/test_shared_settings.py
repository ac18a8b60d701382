"""Settings shared by several notebooks live once: the series/text models of F-Fidelity's two notebooks, the
ReCo/MeGe family settings, and the Grad-CAM layer table of Few-class Fidelity and TRACE."""

import pytest
import torch

import faithlab as fl
from faithlab.protocols import fewclass, reco_mege, trace
from faithlab.protocols.ffidelity import SeriesTextModels
from faithlab.study import parameters

SHARED = ("ffidelity/series_text", "ffidelity/robustness")


def _series_text(profile: str) -> dict[str, SeriesTextModels]:
    notebooks = {nb.name: nb for nb in parameters.discover()}
    spec = parameters.load_profile(profile)
    return {name: SeriesTextModels(**parameters.merge_parameters(notebooks[name], profile, spec, {})
                                   ["series_text_models"]) for name in SHARED}


@pytest.mark.parametrize("profile", ["smoke", "book", "paper"])
def test_series_text_and_robustness_train_the_same_models(profile):
    settings = _series_text(profile)
    assert settings["ffidelity/series_text"] == settings["ffidelity/robustness"]


def test_paper_dry_robustness_differs_only_in_the_widths_it_states():
    settings = _series_text("paper-dry")
    series_text, robustness = settings["ffidelity/series_text"], settings["ffidelity/robustness"]
    changed = {name for name in vars(series_text) if getattr(series_text, name) != getattr(robustness, name)}
    assert changed == {"ts_width", "ts_lstm_layers", "text_width", "tf_dim"}
    assert robustness.ts_width < series_text.ts_width and robustness.tf_dim < series_text.tf_dim


def test_series_text_models_overrides_and_cases():
    st = SeriesTextModels(ts_models=["bilstm", "cnn1d"], text_removals={"zero embedding": "removed_token"})
    assert st.cases() == [("time series", "bilstm", "time", "zero"), ("time series", "cnn1d", "time", "zero"),
                          ("text", "lstm_text", "tokens", "removed_token"),
                          ("text", "transformer_text", "tokens", "removed_token")]
    with pytest.raises(TypeError, match="st_epochs"):
        SeriesTextModels(st_epochs=3)
    with pytest.raises(ValueError, match="resnet9"):
        st.classifier("resnet9")


def test_series_text_classifier_passes_the_shared_settings(monkeypatch):
    calls = []
    monkeypatch.setattr(fl.recipes, "series_text_classifier", lambda name, **kw: calls.append((name, kw)))
    st = SeriesTextModels(ts_length=40, text_length=16, n_test=7, n_epochs=2)
    st.classifier("cnn1d", seed=3)
    st.classifier("lstm_text", seed=3)
    (_, series), (_, text) = calls
    assert series == {"n_test": 7, "kernel_size": 9, "lstm_layers": 1, "tf_dim": 32, "n_epochs": 2, "seed": 3,
                      "device": "cpu", "n_train": 4000, "length": 40, "width": 32, "offset": 3.0, "positional": True}
    assert text["length"] == 16 and text["n_train"] == 1000 and "offset" not in text


def test_family_settings_from_a_notebooks_parameters():
    params = {"n": 20, "image_size": 8, "k": 3, "epochs": 2, "train_batch": 16, "lr": 0.01, "scheduler": "cosine",
              "seed": 4, "tasks": ["CIFAR-10"], "methods": ["SA"], "ig_steps": 4}
    s = reco_mege.FamilySettings.from_parameters(params)
    assert (s.n, s.image_size, s.k, s.width_scale, s.batch_size) == (20, 8, 3, 1.0, 256)
    assert s.config() == fl.train.TrainConfig(epochs=2, batch_size=16, lr=0.01, seed=4, scheduler="cosine")
    with pytest.raises(TypeError, match="image_size"):
        reco_mege.FamilySettings.from_parameters({"n": 20})
    with pytest.raises(TypeError, match="FamilySettings"):
        reco_mege.families(["CIFAR-10"], params)


def test_family_settings_load_the_task_as_load_task():
    s = reco_mege.FamilySettings(n=12, image_size=8, seed=2)
    d = s.load_task("FashionMNIST")
    ref = reco_mege.load_task("FashionMNIST", n=12, image_size=8, seed=2)
    assert torch.equal(d.x, ref.x) and torch.equal(d.y, ref.y)
    test = s.load_task("FashionMNIST", n=5, split="test")
    assert torch.equal(test.x, reco_mege.load_task("FashionMNIST", n=5, image_size=8, seed=2, split="test").x)


def test_cam_layers_is_one_table():
    assert fewclass.CAM_LAYERS is trace.CAM_LAYERS is fl.models.CAM_LAYERS
    assert {"resnet50", "legacy_xception", *trace.PAPER_MODELS} <= set(fl.models.CAM_LAYERS)
