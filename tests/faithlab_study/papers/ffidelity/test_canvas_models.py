"""F-Fidelity's canvas classifiers as trained replicas (``fs.recipes.canvas_classifier``,
``fs.papers.ffidelity.CanvasModels``): a replica is another draw of the canvases and another training seed under a
cache key of its own, and ``original_and_finetuned`` trains a replica's very models of the ranking study."""

from __future__ import annotations

import torch

import faithlab_study as fs


def test_canvas_replicas_draw_their_own_data_and_training_seed(tmp_path, monkeypatch):
    """A replica of the chapter's canvas classifier is another draw of the canvases and another training seed: its
    own cache entry (data and training config in the key); replica=None keeps the data of the notebook's seed itself
    (one model); the same replica trains the same model again (from the cache), through the recipe and through
    CanvasModels alike."""
    monkeypatch.setenv("FAITHLAB_CACHE", str(tmp_path))
    options = dict(image_size=8, n_train=40, width=4, n_epochs=1)
    base, hist, train, _ = fs.recipes.canvas_classifier(**options)
    assert hist["spec"]["data"]["seed"] == 0  # one model: the notebook's seed
    replica0, replica1 = fs.verdicts.replicas(0, "canvas/main", 2)
    _, hist0, train0, _ = fs.recipes.canvas_classifier(**options, replica=replica0)
    other, hist_other, train_other, _ = fs.recipes.canvas_classifier(**options, replica=replica1)
    assert not hist_other["from_cache"] and hist_other["key"] != hist["key"] != hist0["key"]
    assert not torch.equal(train0.x, train_other.x) and not torch.equal(train.x, train0.x)
    assert hist_other["spec"]["data"]["seed"] == fs.verdicts.replication.data_seed(0, replica1)
    assert any(not torch.equal(a, b) for a, b in zip(base.state_dict().values(), other.state_dict().values()))
    cm = fs.papers.ffidelity.CanvasModels(image_size=8, color=False, n_train=40, width=4, n_epochs=1)
    again, hist_cm, train_cm, _ = cm.classifier(replica=replica1)
    assert hist_cm["from_cache"] and hist_cm["key"] == hist_other["key"]
    assert torch.equal(train_cm.x, cm.load(0, replica1)[0].x) and torch.equal(train_cm.x, train_other.x)


def test_original_and_finetuned_are_the_ranking_studys_models_of_the_replica(tmp_path, monkeypatch):
    """CanvasModels.original_and_finetuned trains one replica's original and fine-tuned models only: the very models
    (the same cache entries) that the ranking study of that replica trains, and another replica's differ."""
    monkeypatch.setenv("FAITHLAB_CACHE", str(tmp_path))
    cm = fs.papers.ffidelity.CanvasModels(image_size=8, color=False, n_train=40, width=4, n_epochs=1,
                                             n_finetune_epochs=1, n_roar_epochs=1)
    _, replica1, replica2 = fs.verdicts.replicas(0, "canvas/main", 3)
    train, test = cm.load(0, replica1)
    study = cm.ranking_study(train, test, {"GradCAM": ("gradcam", {})}, replica=replica1, beta=0.1, n_test=2,
                             n_seeds=1, noise_levels=(0.0,), sparsity=(0.5,), n_samples=2, methods=("F-Fidelity",))
    pair = cm.original_and_finetuned(beta=0.1, replica=replica1)
    assert set(pair) == {"original", "fine-tuned"}
    for name, model in pair.items():
        assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(),
                                                      study.models[name].state_dict().values())), name
    other = cm.original_and_finetuned(beta=0.1, replica=replica2)
    assert any(not torch.equal(a, b) for a, b in zip(other["original"].state_dict().values(),
                                                     pair["original"].state_dict().values()))
