"""Settings shared by several notebooks live once: the series/text models of F-Fidelity's two notebooks, the
canvas image models of its three image notebooks, the ReCo/MeGe family settings, and the Grad-CAM layer table of
Few-class Fidelity and TRACE."""

import dataclasses

import pytest
import torch

import faithlab as fl
import faithlab_study as fs
from faithlab_study.papers import fewclass, reco_mege, trace
from faithlab_study.papers.ffidelity import CanvasModels, SeriesTextModels, VitModels
from faithlab_study.runner import parameters

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
        st.classifier("resnet9", replica=fs.verdicts.Replica("series_text/resnet9", 0, 0))


def test_series_text_classifier_passes_the_shared_settings(monkeypatch):
    calls = []
    monkeypatch.setattr(fs.recipes, "series_text_classifier", lambda name, **kw: calls.append((name, kw)))
    st = SeriesTextModels(ts_length=40, text_length=16, n_test=7, n_epochs=2)
    st.classifier("cnn1d", replica=fs.verdicts.Replica("series_text/cnn1d", 0, 3))
    st.classifier("lstm_text", replica=fs.verdicts.Replica("series_text/lstm_text", 0, 3))
    (_, series), (_, text) = calls
    assert series == {"n_test": 7, "kernel_size": 9, "lstm_layers": 1, "tf_dim": 32, "n_epochs": 2, "seed": 3,
                      "device": "cpu", "n_train": 4000, "length": 40, "width": 32, "offset": 3.0, "positional": True}
    assert text["length"] == 16 and text["n_train"] == 1000 and "offset" not in text


def test_series_text_finetune_uses_the_training_learning_rate(monkeypatch):
    calls = []
    monkeypatch.setattr(fs.recipes, "ffidelity_finetune", lambda *a, **kw: calls.append(kw))
    SeriesTextModels().finetune(None, {}, None, None, beta=0.1, units="time",
                                replica=fs.verdicts.Replica("series_text/cnn1d", 0, 4))
    SeriesTextModels(n_finetune_epochs=2, finetune_lr=0.01).finetune(
        None, {}, None, None, beta=0.2, units="tokens", reference="removed_token",
        replica=fs.verdicts.Replica("series_text/lstm_text", 0, 0))
    default, custom = calls
    # spec §1.4: the fine-tuning hyper-parameters equal the training ones (series_text_classifier's Adam lr)
    assert default["lr"] == fs.recipes.SERIES_TEXT_LR == 3e-3 and default["n_epochs"] == 10 and default["seed"] == 4
    assert custom == {"beta": 0.2, "units": "tokens", "reference": "removed_token", "n_epochs": 2, "lr": 0.01,
                      "seed": 0, "device": "cpu"}


IMAGES = ("ffidelity/images_ranking", "ffidelity/robustness", "ffidelity/images_variants")


def _canvas(profile: str) -> dict[str, CanvasModels]:
    notebooks = {nb.name: nb for nb in parameters.discover()}
    spec = parameters.load_profile(profile)
    return {name: CanvasModels(**parameters.merge_parameters(notebooks[name], profile, spec, {})["canvas_models"])
            for name in IMAGES}


@pytest.mark.parametrize(("profile", "variants_differ"), [
    ("smoke", {"n_train"}),  # images_variants trains on 200 canvases, images_ranking on 300
    ("book", set()),
    ("paper", set()),
    ("paper-dry", {"width"}),  # images_variants: ResNet-9 at its real width (on CIFAR-100)
])
def test_image_notebooks_train_the_same_canvas_models(profile, variants_differ):
    settings = _canvas(profile)
    ranking, variants = settings["ffidelity/images_ranking"], settings["ffidelity/images_variants"]
    assert settings["ffidelity/robustness"] == ranking
    changed = {f.name for f in dataclasses.fields(CanvasModels)
               if getattr(ranking, f.name) != getattr(variants, f.name)}
    assert changed == variants_differ


def test_canvas_models_overrides_and_settings():
    cm = CanvasModels(color=False, width=8, n_train=None, n_epochs=2, n_finetune_epochs=3, n_roar_epochs=4)
    assert cm.data_key(5) == {"dataset": "canvas_digits", "n": None, "size": 16, "r": 0.3, "color": False, "seed": 5}
    assert cm.model_config() == {"in_channels": 1, "n_classes": 10, "width": 8}
    assert cm.model_config(in_channels=3, n_classes=100) == {"in_channels": 3, "n_classes": 100, "width": 8}
    assert [(c.epochs, c.lr, c.batch_size, c.seed) for c in (cm.train_config(1), cm.finetune_config(1),
                                                             cm.roar_config(1))] == [(2, 3e-3, 64, 1),
                                                                                     (3, 1e-3, 64, 1),
                                                                                     (4, 3e-3, 64, 1)]
    with pytest.raises(TypeError, match="image_epochs"):
        CanvasModels(image_epochs=3)
    cluttered = CanvasModels(image_size=24, clutter=3)  # the clutter enters the data and its key; 0 stays out of both
    assert cluttered.data_key(0) == {"dataset": "canvas_digits", "n": 6000, "size": 24, "r": 0.3, "color": True,
                                     "seed": 0, "clutter": 3}
    assert cluttered.load(0)[1].info["clutter"] == 3 and "clutter" not in CanvasModels().canvas(0)


class _Stop(Exception):
    pass


def _record_training(monkeypatch) -> list[tuple]:
    """Stub fl.train.fit (a dummy model) and fl.train.finetune (stops the caller): the cache-key inputs of each."""
    calls = []

    def fit(name, config, train_data, train_config, *, data_key, **_):
        calls.append(("fit", name, config, dataclasses.asdict(train_config), data_key))
        return torch.nn.Identity(), {"key": "base", "spec": {"data": data_key}, "train_seconds": 0.0,
                                     "from_cache": True}

    def finetune(model, train_data, config, augment, *, data_key, base_key, **_):
        calls.append(("finetune", dataclasses.asdict(config), augment.key, data_key, base_key))
        raise _Stop

    monkeypatch.setattr(fl.train, "fit", fit)
    monkeypatch.setattr(fl.train, "finetune", finetune)
    return calls


def test_canvas_recipes_and_ranking_study_train_the_same_models(monkeypatch):
    """robustness reaches the models through the recipes, images_ranking through the study: the same cache keys."""
    calls = _record_training(monkeypatch)
    cm = CanvasModels(image_size=8, n_train=30, width=4, n_epochs=2, n_finetune_epochs=3)
    model, history, train_data, test_data = cm.classifier(seed=2)
    with pytest.raises(_Stop):
        cm.finetune(model, history, train_data, test_data, beta=0.2, seed=2)
    recipes = list(calls)
    calls.clear()
    with pytest.raises(_Stop):
        cm.ranking_study(*cm.load(2), {"Saliency": ("saliency", {})}, seed=2, beta=0.2, methods=["F-Fidelity"])
    assert calls == recipes
    assert recipes[0][1:4] == ("small_cnn", cm.model_config(), dataclasses.asdict(cm.train_config(2)))
    assert recipes[1][1:4] == (dataclasses.asdict(cm.finetune_config(2)),
                               {"random_removal": 0.2, "units": "pixels", "reference": "zero"}, cm.data_key(2))


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


VIT = ("ffidelity/images_variants", "ffidelity/robustness")


@pytest.mark.parametrize("profile", ["smoke", "book", "paper", "paper-dry"])
def test_images_variants_and_robustness_train_the_same_vit(profile):
    notebooks = {nb.name: nb for nb in parameters.discover()}
    spec = parameters.load_profile(profile)
    variants, robustness = (VitModels(**parameters.merge_parameters(notebooks[name], profile, spec, {})["vit_models"])
                            for name in VIT)
    assert variants == robustness
    if profile in ("paper", "paper-dry"):  # the paper's ViT (App. D.1): 6 blocks of width 128, 8 heads, no stem,
        assert (variants.dim, variants.depth, variants.heads, variants.stem_width) == (128, 6, 8, 0)
        # trained on the CNN's canvases (robustness's Table 8 row): the same data, the same cache key
        cnn = CanvasModels(**parameters.merge_parameters(notebooks["ffidelity/robustness"], profile, spec,
                                                         {})["canvas_models"])
        assert variants.canvases(cnn).data_key(0) == cnn.data_key(0)


def test_vit_models_settings_read_the_data():
    vit = VitModels(dim=8, depth=1, heads=2, lr=0.01, n_epochs=2, n_finetune_epochs=3, finetune_lr=0.005)
    train_data, _ = CanvasModels(image_size=12, color=True, n_train=20).load(1)
    assert vit.model_config(train_data) == {"image_size": 12, "patch_size": 4, "in_channels": 3, "n_classes": 10,
                                            "dim": 8, "depth": 1, "heads": 2, "stem_width": 24}
    # the paper's plain ViT (stem_width 0) keeps the options, hence the cache keys, it had before the stem existed
    assert "stem_width" not in VitModels(stem_width=0).model_config(train_data)
    assert [(c.epochs, c.lr, c.batch_size, c.seed, c.optimizer, c.weight_decay, c.scheduler)
            for c in (vit.train_config(4), vit.finetune_config(4))] == [(2, 0.01, 64, 4, "adamw", 1e-4, "cosine"),
                                                                         (3, 0.005, 64, 4, "adamw", 1e-4, "cosine")]
    with pytest.raises(TypeError, match="vit_dim"):
        VitModels(vit_dim=3)


def test_vit_models_canvases_are_the_cnns_with_the_vits_training_canvases():
    cnn = CanvasModels(image_size=8, n_train=12, palette="saturated")
    mine = VitModels(n_train=20).canvases(cnn)
    assert mine == dataclasses.replace(cnn, n_train=20) and mine.data_key(3) == {**cnn.data_key(3), "n": 20}
    (cnn_train, cnn_test), (vit_train, vit_test) = cnn.load(3), mine.load(3)
    assert len(cnn_train) == 12 and len(vit_train) == 20
    assert torch.equal(cnn_test.x, vit_test.x) and torch.equal(cnn_test.y, vit_test.y)  # one test split for both


def test_vit_models_classifier_and_ranking_study_train_the_same_models(monkeypatch):
    """robustness reaches the ViT through classifier/finetune, images_variants through the study: same cache keys."""
    calls = _record_training(monkeypatch)
    vit = VitModels(dim=8, depth=1, heads=2, n_epochs=2, n_finetune_epochs=3)
    cm = CanvasModels(image_size=8, n_train=30)
    train_data, test_data = cm.load(2)
    replica = fs.verdicts.Replica("vit/main", 0, 2)
    model, history = vit.classifier(train_data, test_data, data_key=cm.data_key(2), replica=replica)
    with pytest.raises(_Stop):
        vit.finetune(model, history, train_data, test_data, beta=0.2, data_key=cm.data_key(2), replica=replica)
    direct = list(calls)
    calls.clear()
    with pytest.raises(_Stop):
        vit.ranking_study(train_data, test_data, {"Saliency": ("saliency", {})}, data_key=cm.data_key(2), replica=replica,
                          beta=0.2, methods=["F-Fidelity"])
    assert calls == direct
    assert direct[0][1:5] == ("vit", vit.model_config(train_data), dataclasses.asdict(vit.train_config(2)),
                              cm.data_key(2))
    assert direct[1][1:5] == (dataclasses.asdict(vit.finetune_config(2)),
                              {"random_removal": 0.2, "units": "pixels", "reference": "zero"}, cm.data_key(2), "base")
