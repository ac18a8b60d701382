"""Tests of faithlab.train: caching, seeding, NaN detection, checkpoint choice and the augmentation hooks."""

from __future__ import annotations

import dataclasses
import math

from pathlib import Path

import pytest
import torch
from torch.utils.data import Dataset, TensorDataset

import faithlab as fl
from faithlab.train import Compose, CropFlip, ExplanationGuidedRemoval, RandomRemoval, TrainConfig

CNN = dict(in_channels=1, n_classes=2, width=4)
FAST = TrainConfig(epochs=2, lr=1e-2, batch_size=16)


@pytest.fixture(autouse=True)
def _setup(tmp_path, monkeypatch):
    """Each test gets its own cache folder."""
    monkeypatch.setenv("FAITHLAB_CACHE", str(tmp_path / "cache"))


def _squares(n: int, seed: int) -> TensorDataset:
    """Class 1 images carry a bright 3×3 square in the top-left corner: linearly separable."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 1, 8, 8, generator=g) * 0.5
    y = torch.arange(n) % 2
    x[y == 1, :, :3, :3] += 2.0
    return TensorDataset(x, y)


class _Plain(Dataset):
    """A generic map-style dataset (exercises the DataLoader path)."""

    def __init__(self, data: TensorDataset):
        self.data = data

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, i):
        return self.data[i]


def _weights(model) -> list[torch.Tensor]:
    return [v.clone() for v in model.state_dict().values()]


def _equal(a, b) -> bool:
    return len(a) == len(b) and all(torch.equal(u, v) for u, v in zip(a, b))


def _fit(data=None, config=FAST, name="small_cnn", model_config=CNN, **kw):
    kw = {"data_key": "squares-64", "progress": False, **kw}
    return fl.train.fit(name, model_config, data if data is not None else _squares(64, 0), config, **kw)


# ---------------------------------------------------------------------------------------------------- caching


def test_cache_hit_returns_identical_weights_without_training(tmp_path, monkeypatch):
    model, history = _fit()
    files = sorted(p.name for p in (tmp_path / "cache" / "models").iterdir())
    assert files == [f"{history['key']}.json", f"{history['key']}.pt"] and not history["from_cache"]

    def no_training(*args, **kwargs):
        raise AssertionError("a cache hit must not train")

    monkeypatch.setattr(torch.optim.Adam, "step", no_training)
    again, cached = _fit()
    assert cached["from_cache"] and cached["epochs"] == history["epochs"] and cached["key"] == history["key"]
    assert _equal(_weights(model), _weights(again)) and not again.training
    with pytest.raises(AssertionError, match="cache hit"):
        _fit(cache=False)


def _fit_in_process(cache: str) -> bool:
    """Run in a fresh process: fit the test configuration into ``cache``; True if it came from the cache."""
    import os

    os.environ["FAITHLAB_CACHE"] = cache
    return _fit(config=TrainConfig(epochs=30, lr=1e-2, batch_size=16))[1]["from_cache"]


def test_a_fit_waits_for_the_entry_s_lock_then_loads_what_its_holder_saved(tmp_path):
    """Two processes (e.g. two shards of a notebook) fitting one configuration at once: the second waits while the
    first holds the entry's lock, then loads the weights the first saved instead of training again."""
    import concurrent.futures
    import multiprocessing
    import shutil
    import time

    from faithlab.train.cache import cache_files, training_lock

    trained_elsewhere = tmp_path / "elsewhere"
    _, history = _fit_elsewhere(str(trained_elsewhere))
    weights, meta = cache_files(history["key"], tmp_path / "shared")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        with training_lock(weights):  # the "first process", still training
            waiting = pool.submit(_fit_in_process, str(tmp_path / "shared"))
            time.sleep(8)
            assert not waiting.done() and not weights.exists()
            weights.parent.mkdir(parents=True)
            for f in cache_files(history["key"], trained_elsewhere):
                shutil.copy(f, weights.parent / f.name)
        assert waiting.result(timeout=120) is True


def _fit_elsewhere(cache: str):
    import os

    os.environ["FAITHLAB_CACHE"] = cache
    return _fit(config=TrainConfig(epochs=30, lr=1e-2, batch_size=16))


def test_cache_key_changes_with_every_config_piece(tmp_path, monkeypatch):
    tiny = TrainConfig(epochs=1, batch_size=32)
    data = _squares(32, 0)

    def key(**kw):
        args = {"data": data, "config": tiny, "cache": False, **kw}
        return _fit(**args)[1]["key"]

    base = key()
    assert key(model_config=dict(reversed(list(CNN.items())))) == base  # canonical JSON: order-free
    variants = [
        key(name="cnn1d", model_config=dict(in_channels=8, n_classes=2, width=4), data=TensorDataset(
            torch.randn(32, 8, 8), torch.arange(32) % 2)),
        key(model_config=dict(CNN, width=5)),
        key(data_key="squares-64-v2"),
        key(augment=RandomRemoval(0.1)),
        key(augment=RandomRemoval(0.2)),
        key(test_data=data),
        key(test_data=_squares(32, 1)),  # which test set picks the best epoch is part of the key
    ]

    class Items(Dataset):  # file-backed stand-in: items one by one, no tensors attribute
        def __init__(self, ds):
            self.ds = ds

        def __len__(self):
            return len(self.ds)

        def __getitem__(self, i):
            return self.ds[i]

    assert key(test_data=Items(data)) == key(test_data=data)  # the key is the content, not the container
    changes = dict(epochs=2, lr=2e-3, weight_decay=1e-4, optimizer="sgd", batch_size=16, seed=1, momentum=0.5,
                   scheduler="cosine", augment=("crop_flip",), drop_last=True)
    assert set(changes) == {f.name for f in dataclasses.fields(TrainConfig)}
    variants += [key(config=dataclasses.replace(tiny, **{k: v})) for k, v in changes.items()]
    monkeypatch.setattr(fl, "__version__", "99.0")
    variants.append(key())
    assert len(set(variants)) == len(variants) and base not in variants
    assert not (tmp_path / "cache").exists()  # cache=False touches no disk


def test_failed_save_leaves_no_partial_file(tmp_path, monkeypatch):
    real_save = torch.save

    def broken_save(obj, f, *args, **kwargs):
        Path(f).write_bytes(b"half a checkpoint")
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", broken_save)
    with pytest.raises(OSError, match="disk full"):
        _fit()
    assert list((tmp_path / "cache" / "models").iterdir()) == []
    monkeypatch.setattr(torch, "save", real_save)
    _, history = _fit()
    _, cached = _fit()
    assert cached["from_cache"] and cached["key"] == history["key"]


def test_cache_dir_argument_overrides_the_default(tmp_path):
    _, history = _fit(cache_dir=tmp_path / "elsewhere")
    assert (tmp_path / "elsewhere" / "models" / f"{history['key']}.pt").is_file()
    assert not (tmp_path / "cache" / "models").exists()


# ---------------------------------------------------------------------------------------------------- seeding


def test_same_seed_same_weights_any_dataset_path_and_global_rng_untouched():
    config = TrainConfig(epochs=2, lr=1e-2, batch_size=16, augment=("crop_flip",))
    vit = dict(image_size=8, patch_size=4, in_channels=1, n_classes=2, dim=8, depth=1, heads=2, dropout=0.2)
    state = torch.get_rng_state()
    first, _ = _fit(config=config, name="vit", model_config=vit, cache=False)
    assert torch.equal(torch.get_rng_state(), state)
    second, _ = _fit(_Plain(_squares(64, 0)), config=config, name="vit", model_config=vit, cache=False)
    other, _ = _fit(config=dataclasses.replace(config, seed=1), name="vit", model_config=vit, cache=False)
    assert _equal(_weights(first), _weights(second))
    assert not _equal(_weights(first), _weights(other))


def test_easy_task_is_learnt_and_the_best_test_epoch_is_kept():
    train, test = _squares(128, 0), _squares(64, 1)
    config = TrainConfig(epochs=4, lr=1e-2, batch_size=16)
    model, history = _fit(train, config=config, test_data=test)
    accs = [row["test_acc"] for row in history["epochs"]]
    assert max(accs) >= 0.95
    assert history["best_epoch"] == 1 + accs.index(max(accs))
    # fit evaluates in batches of config.batch_size: the same batch shapes here, so the same logits bit for bit
    assert fl.train.loss_and_accuracy(model, test, batch_size=config.batch_size)["accuracy"] == max(accs)
    assert [row["epoch"] for row in history["epochs"]] == [1, 2, 3, 4]


def test_a_single_logit_model_is_trained_and_evaluated_as_binary():
    train, test = _squares(128, 0), _squares(64, 1)
    config = TrainConfig(epochs=4, lr=1e-2, batch_size=16)
    model, history = _fit(train, config=config, test_data=test, model_config={**CNN, "n_classes": 1})
    scores = fl.train.loss_and_accuracy(model, test, batch_size=config.batch_size)  # fit's batch shapes: same logits
    assert scores["accuracy"] == max(row["test_acc"] for row in history["epochs"]) >= 0.95
    x, y = test.tensors
    with torch.no_grad():
        logit = model(x)[:, 0]
    assert scores["accuracy"] == float(((logit > 0).long() == y).float().mean())
    assert scores["loss"] == pytest.approx(float(torch.nn.functional.binary_cross_entropy_with_logits(
        logit, y.float())), rel=1e-5)


def test_nan_loss_raises_naming_the_epoch_and_caches_nothing(tmp_path):
    x, y = _squares(32, 0).tensors
    bad = x.clone()
    bad[5, 0, 0, 0] = math.nan
    with pytest.raises(RuntimeError, match="epoch 1 of 2"):
        _fit(TensorDataset(bad, y))
    with pytest.raises(RuntimeError, match=r"loss became (nan|inf) in epoch \d"):
        _fit(config=TrainConfig(epochs=3, lr=1e30, optimizer="sgd", batch_size=16))
    assert list((tmp_path / "cache" / "models").glob("*")) == []


def test_hook_sees_the_batch_and_its_dataset_indices():
    data = _squares(40, 0)
    seen = []

    class Spy:
        key = "spy"

        def __call__(self, x, y, idx, generator):
            assert torch.equal(x, data.tensors[0][idx]) and torch.equal(y, data.tensors[1][idx])
            seen.append(idx)
            return x

    _fit(data, config=TrainConfig(epochs=2, batch_size=16), augment=Spy(), cache=False)
    epoch1 = torch.cat(seen[:3])
    assert [len(i) for i in seen] == [16, 16, 8] * 2 and torch.equal(epoch1.sort().values, torch.arange(40))
    assert not torch.equal(epoch1, torch.cat(seen[3:]))  # reshuffled every epoch


def test_finetune_starts_from_the_base_model_and_is_cached_per_base():
    base, history = _fit()
    before = _weights(base)
    config = TrainConfig(epochs=1, lr=1e-3, batch_size=16)
    tuned, tuned_history = fl.train.finetune(base, _squares(64, 0), config, RandomRemoval(0.2), data_key="squares-64",
                                             base_key=history["key"], progress=False)
    assert _equal(_weights(base), before)  # the base model is not modified
    assert not _equal(_weights(tuned), before)
    drift = max(float((a - b).abs().max()) for a, b in zip(_weights(tuned), before) if a.is_floating_point())
    assert drift < 0.1  # one small-lr epoch from the base, not a fresh init
    again, cached = fl.train.finetune(base, _squares(64, 0), config, RandomRemoval(0.2), data_key="squares-64",
                                      base_key=history["key"], progress=False)
    assert cached["from_cache"] and _equal(_weights(again), _weights(tuned))
    _, other = fl.train.finetune(base, _squares(64, 0), config, RandomRemoval(0.2), data_key="squares-64",
                                 base_key="another-base", progress=False, cache=False)
    assert other["key"] != tuned_history["key"]


def test_argument_errors():
    data = _squares(8, 0)
    for kw, name in [(dict(epochs=0), "epochs"), (dict(lr=0.0), "lr"), (dict(optimizer="rmsprop"), "optimizer"),
                     (dict(scheduler="step"), "scheduler"), (dict(augment=("mixup",)), "augment"),
                     (dict(seed=-1), "seed"), (dict(weight_decay=math.inf), "weight_decay")]:
        with pytest.raises(ValueError, match=name):
            TrainConfig(**kw)
    with pytest.raises(ValueError, match="model_name"):
        fl.train.fit("nope", {}, data, FAST, data_key="d")
    with pytest.raises(TypeError, match="train_data"):
        fl.train.fit("small_cnn", CNN, [(1, 2)], FAST, data_key="d")
    with pytest.raises(TypeError, match="augment"):
        fl.train.fit("small_cnn", CNN, data, FAST, data_key="d", augment=lambda x, y, i, g: x)
    with pytest.raises(TypeError, match="JSON"):
        fl.train.fit("small_cnn", CNN, data, FAST, data_key=object())
    with pytest.raises(ValueError, match="base_key"):
        fl.train.finetune(torch.nn.Linear(2, 2), data, FAST, None, data_key="d", base_key="")
    with pytest.raises(ValueError, match="training mode"):
        fl.train.loss_and_accuracy(fl.models.build("small_cnn", **CNN), data)


# ----------------------------------------------------------------------------------------------- augmentations


def test_random_removal_removes_floor_u_n_whole_pixels_as_uniform_fraction_mask():
    x = torch.ones(200, 2, 5, 6)
    out = RandomRemoval(max_fraction=0.3)(x, None, torch.arange(200), torch.Generator().manual_seed(3))
    removed = out.eq(0).flatten(2)
    assert torch.equal(removed[:, 0], removed[:, 1])  # whole pixels, all channels
    counts = removed[:, 0].sum(1)
    assert 8 <= int(counts.max()) <= math.floor(0.3 * 30) and int(counts.min()) == 0  # u < β: at most ⌊β·n⌋
    expected = fl.perturb.uniform_fraction_mask(200, 30, 0.3, generator=torch.Generator().manual_seed(3))
    assert torch.equal(removed[:, 0], expected)
    tokens = torch.randint(1, 9, (50, 20))
    kept = RandomRemoval(0.5, units="tokens")(tokens, None, torch.arange(50), torch.Generator().manual_seed(0))
    assert int((kept == 0).sum(1).max()) <= 10 and bool(((kept == 0) | (kept == tokens)).all())
    with pytest.raises(ValueError, match="units"):
        RandomRemoval(units="patches")
    with pytest.raises(ValueError, match="max_fraction"):
        RandomRemoval(max_fraction=1.5)


def test_explanation_guided_removal_removes_exactly_the_top_scored_units():
    g = torch.Generator().manual_seed(0)
    scores = torch.randn(50, 12, generator=g)
    idx = torch.tensor([7, 3, 41, 3, 0, 19, 28, 33])
    x = torch.ones(8, 12, 3)  # series (B, T, C)
    out = ExplanationGuidedRemoval(scores, units="time")(x, None, idx, torch.Generator().manual_seed(4))
    removed = out.eq(0).all(-1)
    r = torch.rand(8, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    for i in range(8):
        k = math.floor(float(r[i]) * 12)
        top = set(scores[idx[i]].topk(k).indices.tolist()) if k else set()
        assert set(removed[i].nonzero().flatten().tolist()) == top
    assert len({int(c) for c in removed.sum(1)}) > 2
    with pytest.raises(ValueError, match="scores has 12 units"):
        ExplanationGuidedRemoval(scores)(torch.ones(8, 1, 4, 4), None, idx, g)
    assert ExplanationGuidedRemoval(scores).key != ExplanationGuidedRemoval(scores + 1).key


def test_explanation_guided_removal_breaks_ties_like_the_evaluation():
    """Tied scores (GradCAM's zeros) are removed in a random order, as the evaluation orders them; "index" keeps
    the old top-left-first order."""
    scores = torch.zeros(40, 16)
    idx, x = torch.arange(40), torch.ones(40, 1, 4, 4)
    tied = ExplanationGuidedRemoval(scores)(x, None, idx, torch.Generator().manual_seed(1)).eq(0).flatten(1)
    r = torch.rand(40, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    assert torch.equal(tied.sum(1), torch.floor(r * 16).long())
    assert len({tuple(row.tolist()) for row in tied if 0 < row.sum() < 16}) > 10  # not always the same pixels
    by_index = ExplanationGuidedRemoval(scores, ties="index")(x, None, idx, torch.Generator().manual_seed(1))
    removed = by_index.eq(0).flatten(1)
    assert all(bool(row[: int(row.sum())].all()) for row in removed)
    assert ExplanationGuidedRemoval(scores).key != ExplanationGuidedRemoval(scores, ties="index").key
    with pytest.raises(ValueError, match="ties"):
        ExplanationGuidedRemoval(scores, ties="lowest")


def test_crop_flip_returns_shifted_padded_crops_possibly_mirrored():
    x = torch.arange(20 * 2 * 4 * 4, dtype=torch.float32).view(20, 2, 4, 4) + 1
    out = CropFlip(padding=1)(x, None, torch.arange(20), torch.Generator().manual_seed(0))
    again = CropFlip(padding=1)(x, None, torch.arange(20), torch.Generator().manual_seed(0))
    assert torch.equal(out, again) and out.shape == x.shape
    padded = torch.nn.functional.pad(x, (1, 1, 1, 1))
    found = set()
    for i in range(20):
        matches = [(dy, dx, f) for dy in range(3) for dx in range(3) for f in (False, True)
                   if torch.equal(out[i], (lambda c: c.flip(-1) if f else c)(padded[i, :, dy:dy + 4, dx:dx + 4]))]
        assert len(matches) == 1
        found.add(matches[0])
    assert len({m[2] for m in found}) == 2 and len({m[:2] for m in found}) >= 5


def test_compose_chains_hooks_and_keys():
    scores = torch.arange(16.0).expand(4, 16)
    hook = Compose(ExplanationGuidedRemoval(scores, reference=5.0, key="s"), RandomRemoval(0.5, reference=-1.0))
    assert hook.key[0]["explanation_guided_removal"] == "s" and hook.key[1]["random_removal"] == 0.5
    out = hook(torch.zeros(4, 1, 4, 4), None, torch.arange(4), torch.Generator().manual_seed(0))
    assert set(out.unique().tolist()) <= {0.0, 5.0, -1.0} and bool((out == 5.0).any()) and bool((out == -1.0).any())
    with pytest.raises(TypeError, match=r"hooks\[0\]"):
        Compose(lambda x, y, i, g: x)


def test_cache_key_of_a_fixed_configuration_is_pinned(tmp_path):
    """A change of the cache key silently retrains every cached model and drops the reuse of published weights:
    this pins the key of one configuration (with a test set and an augmentation hook) to the value the library
    computed when the key's recipe last changed on purpose. Update the literal only with such a change."""
    # exactly representable inputs (k/128): linspace's float bits depend on the CPU's SIMD path, and so did the key
    x = ((torch.arange(8 * 2 * 4 * 4, dtype=torch.float32) - 128) / 128).view(8, 2, 4, 4)
    data = torch.utils.data.TensorDataset(x, torch.tensor([0, 1] * 4))
    _, history = fl.train.fit("small_cnn", {"in_channels": 2, "n_classes": 2, "width": 2}, data,
                              TrainConfig(epochs=1, batch_size=4), data_key="pinned", test_data=data,
                              augment=RandomRemoval(0.2), cache_dir=tmp_path, device="cpu", progress=False)
    assert history["key"] == "bb07f4e7fe0f00d10ac2c204a91bccee2c00adb51e7217af01ec033d567e3260"
