"""The real-dataset loaders of faithlab.data on tiny fake copies written in each dataset's real on-disk format
(tests/support/paper_dry.py's writers): CIFAR-10/100 (pickle and binary), Fashion-MNIST, EuroSAT, Tiny ImageNet,
ImageNet val, SST-2, PAM and Boiler, and the paper profile's ImageNet vehicles and CT contrast folders."""

from __future__ import annotations

import os
import pickle

import numpy as np
import pytest
import torch

import faithlab as fl
import paper_dry as fake

D = fl.data


# -------------------------------------------------------------------------------------- real loaders, fake files
def _pixels(n: int, offset: int) -> np.ndarray:
    return ((np.arange(n * 3072).reshape(n, 3072) + offset * 7) % 256).astype(np.uint8)


@pytest.fixture
def cifar_md5_bypass(monkeypatch):
    """torchvision verifies the md5 of every CIFAR file (``check_integrity`` in torchvision.datasets.cifar, used by
    ``_check_integrity`` and ``_load_meta``); the fake files cannot match, so the test replaces that function by
    an existence check."""
    import torchvision.datasets.cifar as cifar

    monkeypatch.setattr(cifar, "check_integrity", lambda path, md5=None: os.path.isfile(path))


def test_cifar10_fake_pickle_batches(tmp_path, cifar_md5_bypass):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    for k, name in enumerate([f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]):
        with open(folder / name, "wb") as f:
            pickle.dump({"data": _pixels(2, k), "labels": [k % 10, (k + 3) % 10]}, f)
    with open(folder / "batches.meta", "wb") as f:
        pickle.dump({"label_names": [f"class{i}" for i in range(10)]}, f)
    train = D.load("cifar10", split="train", data_dir=tmp_path)
    test = D.load("cifar10", split="test", data_dir=str(tmp_path))
    assert len(train) == 10 and len(test) == 2 and train.info["n_classes"] == 10
    x, y = D.to_tensors(test, batch_size=1)
    mean, std = (torch.tensor(s)[:, None, None] for s in D.CIFAR10_STATS)
    expected = (torch.tensor(_pixels(2, 5)).reshape(2, 3, 32, 32).float() / 255 - mean) / std
    assert torch.allclose(x, expected, atol=1e-5) and y.tolist() == [5, 8]


def test_cifar100_fake_pickle(tmp_path, cifar_md5_bypass):
    folder = tmp_path / "cifar-100-python"
    folder.mkdir()
    for k, name in enumerate(["train", "test"]):
        with open(folder / name, "wb") as f:
            pickle.dump({"data": _pixels(3, k), "fine_labels": [99, 0, 42], "coarse_labels": [0, 1, 2]}, f)
    with open(folder / "meta", "wb") as f:
        pickle.dump({"fine_label_names": [f"c{i}" for i in range(100)]}, f)
    data = D.load("cifar100", split="train", data_dir=tmp_path)
    x, y = D.to_tensors(data)
    assert y.tolist() == [99, 0, 42] and data.info["n_classes"] == 100 and x.shape == (3, 3, 32, 32)
    assert data.info["mean"] == D.CIFAR100_STATS[0]


def test_cifar_binary_version_matches_the_python_version(tmp_path, cifar_md5_bypass):
    """The binary version (no pickle) decodes to the same images and labels as the python version."""
    images = _pixels(7, 3).reshape(7, 3, 32, 32).transpose(0, 2, 3, 1)
    labels = np.array([9, 0, 3, 3, 1, 8, 2])
    names = [f"class{i}" for i in range(10)]
    fake.write_cifar_binary(tmp_path / "bin", "cifar10", train=(images, labels), test=(images[:2], labels[:2]),
                            class_names=names)
    train = D.load("cifar10", split="train", data_dir=tmp_path / "bin")
    assert train.info["class_names"] == names and len(D.load("cifar10", split="test", data_dir=tmp_path / "bin")) == 2
    x, y = D.to_tensors(train)
    mean, std = (torch.tensor(s)[:, None, None] for s in D.CIFAR10_STATS)
    assert y.tolist() == labels.tolist()
    assert torch.allclose(x, (torch.tensor(images).permute(0, 3, 1, 2).float() / 255 - mean) / std, atol=1e-5)
    folder = tmp_path / "py" / "cifar-10-batches-py"  # the same images in the python version
    folder.mkdir(parents=True)
    for k, name in enumerate([f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]):
        with open(folder / name, "wb") as f:
            rows = slice(0, 7) if k == 0 else slice(0, 0)
            data = images.transpose(0, 3, 1, 2).reshape(7, 3072)[rows]
            pickle.dump({"data": data, "labels": labels[rows].tolist()}, f)
    with open(folder / "batches.meta", "wb") as f:
        pickle.dump({"label_names": names}, f)
    xp, yp = D.to_tensors(D.load("cifar10", split="train", data_dir=tmp_path / "py"))
    assert torch.equal(x, xp) and torch.equal(y, yp)
    fine = np.arange(7) * 13 % 100
    fake.write_cifar_binary(tmp_path / "bin", "cifar100", train=(images, fine), test=(images, fine),
                            class_names=[f"c{i}" for i in range(100)])
    data = D.load("cifar100", split="test", data_dir=tmp_path / "bin")
    assert D.to_tensors(data)[1].tolist() == fine.tolist() and data.info["n_classes"] == 100  # fine labels
    (tmp_path / "bin" / "cifar-10-batches-bin" / "test_batch.bin").write_bytes(bytes(3000))
    with pytest.raises(ValueError, match="test_batch.bin.*record size 3073"):
        D.load("cifar10", split="test", data_dir=tmp_path / "bin")
    with pytest.raises(FileNotFoundError, match="cifar-10-batches-bin"):
        D.load("cifar10", data_dir=tmp_path / "nothing")


def test_fashion_mnist_fake_idx_files(tmp_path):
    images = (np.arange(4 * 28 * 28).reshape(4, 28, 28) % 256).astype(np.uint8)
    fake.write_fashion_mnist(tmp_path, train=(images, np.arange(4) * 3 % 10), test=(images[:2], np.arange(2) * 3 % 10))
    x, y = D.to_tensors(D.load("fashion_mnist", split="train", data_dir=tmp_path))
    (mean,), (std,) = D.FASHION_MNIST_STATS
    assert x.shape == (4, 1, 28, 28) and y.tolist() == [0, 3, 6, 9]
    assert torch.allclose(x[:, 0], (torch.tensor(images).float() / 255 - mean) / std, atol=1e-5)
    assert len(D.load("fashion_mnist", split="test", data_dir=tmp_path)) == 2


def _solid_jpeg(path, colour, size=(64, 64)) -> None:
    fake.write_image(path, fake.solid(colour, size=size))


COLOURS = [(200, 30, 30), (30, 200, 30), (30, 30, 200)]


def _decoded_class(x: torch.Tensor, mean, std) -> int:
    """Which of COLOURS a normalised solid image shows."""
    rgb = (x.mean(dim=(1, 2)) * torch.tensor(std) + torch.tensor(mean)) * 255
    return int(torch.stack([(rgb - torch.tensor(c)).abs().sum() for c in COLOURS]).argmin())


def test_eurosat_fake_image_folder_split(tmp_path):
    fake.write_eurosat(tmp_path, {name: [fake.solid(COLOURS[c])] * 5
                                  for c, name in enumerate(["AnnualCrop", "Forest", "River"])})
    train = D.load("eurosat", split="train", data_dir=tmp_path, seed=1)
    test = D.load("eurosat", split="test", data_dir=tmp_path, seed=1)
    assert (len(train), len(test)) == (12, 3) and not set(train.indices) & set(test.indices)
    x, y = D.to_tensors(test)
    assert sorted(y.tolist()) == [0, 1, 2] and x.shape == (3, 3, 64, 64)
    assert [_decoded_class(xi, *D.IMAGENET_STATS) for xi in x] == y.tolist()
    assert test.info["class_names"] == ["AnnualCrop", "Forest", "River"]


def test_tiny_imagenet_fake_layout(tmp_path):
    base = tmp_path / "tiny-imagenet-200"
    wnids = ["n02", "n01", "n03"]  # file order ≠ sorted order: the class index follows sorted wnids
    image = {w: fake.solid(COLOURS[sorted(wnids).index(w)]) for w in wnids}
    fake.write_tiny_imagenet(base, wnids=wnids, words={"n01": "goldfish", "n02": "shark", "n03": "ray"},
                             train={w: [image[w]] * 2 for w in wnids},
                             val=[(f"val_{w}.JPEG", image[w], w, (1, 2, 50, 60)) for w in wnids])
    train = D.load("tiny_imagenet", split="train", data_dir=tmp_path)
    test = D.load("tiny_imagenet", split="test", data_dir=base)
    assert len(train) == 6 and train.info["class_names"] == ["goldfish", "shark", "ray"]
    for dataset in (train, test):
        x, y = D.to_tensors(dataset)
        assert [_decoded_class(xi, *D.TINY_IMAGENET_STATS) for xi in x] == y.tolist()
    assert D.to_tensors(test)[1].tolist() == [1, 0, 2] and test.boxes.tolist()[0] == [1, 2, 50, 60]
    with pytest.raises(FileNotFoundError, match="wnids.txt"):
        D.load("tiny_imagenet", data_dir=tmp_path / "nothing")


def test_imagenet_val_fake_image_folder(tmp_path):
    for c, wnid in enumerate(["n01440764", "n01443537"]):
        _solid_jpeg(tmp_path / "val" / wnid / f"ILSVRC2012_val_0000000{c}.JPEG", COLOURS[c], size=(300, 260))
    data = D.load("imagenet_val", split="test", data_dir=tmp_path)
    x, y = D.to_tensors(data)
    assert x.shape == (2, 3, 224, 224) and y.tolist() == [0, 1]
    assert [_decoded_class(xi, *D.IMAGENET_STATS) for xi in x] == [0, 1]
    with pytest.raises(ValueError, match="split"):
        D.load("imagenet_val", split="train", data_dir=tmp_path)


def test_sst2_fake_tsv(tmp_path):
    fake.write_sst2(tmp_path / "SST-2", train=[("Good movie good", 1), ("bad movie", 0), ("very very good", 1)],
                    dev=[("good but unseen words", 1), ("bad", 0)])
    train = D.load("sst2", split="train", data_dir=tmp_path, max_len=4)
    assert train.info["vocab"] == ["good", "movie", "very", "bad"]  # by count, ties alphabetical
    assert train.x.tolist() == [[2, 3, 2, 0], [5, 3, 0, 0], [4, 4, 2, 0]] and train.y.tolist() == [1, 0, 1]
    test = D.load("sst2", split="test", data_dir=tmp_path, max_len=3)
    assert test.x.tolist() == [[2, 1, 1], [5, 0, 0]] and test.lengths.tolist() == [3, 1]  # unk = 1, truncated
    with pytest.raises(FileNotFoundError, match="dev.tsv"):
        D.load("sst2", split="test", data_dir=tmp_path / "SST-2" / "missing")


def test_pam_fake_timex_files(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.uniform(0.5, 3.0, size=(10, 6, 3)).astype(np.float32)
    x[rng.uniform(size=x.shape) < 0.3] = 0.0  # missing observations
    # The published split is an object .npy (pickled); its non-pickle form, the .npz beside it (see fl.data.pam)
    fake.write_pam(tmp_path, x, np.stack([np.zeros(10), np.arange(10) % 8], 1),
                   splits=(np.arange(6), np.arange(6, 8), np.arange(8, 10)), split_no=2)
    data = D.load("pam", split="test", data_dir=tmp_path, split_no=2)
    assert data.x.shape == (2, 6, 3) and data.y.tolist() == [0, 1] and data.info["n_classes"] == 8
    expected = np.zeros((2, 6, 3), dtype=np.float32)
    for f in range(3):  # TimeX: statistics of the observed (> 0) train values, missing → 0
        observed = x[:6, :, f][x[:6, :, f] > 0]
        part = x[8:, :, f]
        expected[:, :, f] = np.where(part > 0, (part - observed.mean()) / max(observed.std(), 1e-7), 0)
    assert np.allclose(data.x.numpy(), expected, atol=1e-5)
    with pytest.raises(FileNotFoundError, match="PAMAP2_split_1.npy"):
        D.load("pam", data_dir=tmp_path)


def test_boiler_fake_timex_files(tmp_path):
    x_full = torch.randn(5, 8, 2)  # TimeX stores (T, N, C)
    fake.write_boiler(tmp_path, x_full, torch.tensor([0, 1] * 4),
                      splits=(torch.arange(5), torch.tensor([5]), torch.tensor([6, 7])))
    data = D.load("boiler", split="train", data_dir=tmp_path)
    assert torch.equal(data.x, x_full.permute(1, 0, 2)[:5]) and data.y.tolist() == [0, 1, 0, 1, 0]
    assert len(D.load("boiler", split="val", data_dir=tmp_path)) == 1
    with pytest.raises(ValueError, match="split"):
        D.load("boiler", split="dev", data_dir=tmp_path)


# ----------------------------------------------------------------------------- paper-profile loaders, fake files
def test_imagenet_vehicles_fake_image_folder_and_boxes(tmp_path):
    classes = ["two-wheeled", "private", "trucks-and-services"]  # class index = sorted folder order
    for name in classes:
        c = sorted(classes).index(name)
        suffix = "png" if c == 2 else "jpeg"
        fake.write_image(tmp_path / "test" / name / f"img_{c}.{suffix}", fake.solid(COLOURS[c], size=(300, 260)))
    data = D.load("imagenet_vehicles", split="test", data_dir=tmp_path)
    assert data.info["class_names"] == sorted(classes) and data.info["n_classes"] == 3
    assert not hasattr(data, "boxes")
    x, y = D.to_tensors(data)
    assert x.shape == (3, 3, 224, 224) and y.tolist() == [0, 1, 2]
    assert [_decoded_class(xi, *D.IMAGENET_STATS) for xi in x] == [0, 1, 2]
    rows = ["file,x0,y0,x1,y1", "two-wheeled/img_2.png,0,0,224,224", "private/img_0.jpeg,10,20,110,120",
            "trucks-and-services/img_1.jpeg,1,2,3,4"]
    (tmp_path / "test_boxes.csv").write_text("\n".join(rows) + "\n")
    data = D.imagenet_vehicles(data_dir=tmp_path)
    assert data.boxes.tolist() == [[10, 20, 110, 120], [1, 2, 3, 4], [0, 0, 224, 224]]  # in sample order
    (tmp_path / "test_boxes.csv").write_text("\n".join(rows[:3]) + "\n")
    with pytest.raises(ValueError, match="trucks-and-services/img_1.jpeg"):
        D.imagenet_vehicles(data_dir=tmp_path)
    (tmp_path / "test_boxes.csv").write_text("\n".join(rows[:3] + ["trucks-and-services/img_1.jpeg,0,0,225,9"]))
    with pytest.raises(ValueError, match="x1 <= 224"):
        D.imagenet_vehicles(data_dir=tmp_path)
    with pytest.raises(FileNotFoundError, match=r"data_dir/train/<class>") as err:
        D.load("imagenet_vehicles", split="train", data_dir=tmp_path)
    assert str(tmp_path) in str(err.value)
    with pytest.raises(ValueError, match="data_dir"):
        D.load("imagenet_vehicles", split="test")


_ct_folder = fake.write_ct_split  # images/*.npy, masks/<name> (.npy or .png), labels.csv


def test_ct_contrast_fake_folder(tmp_path):
    rng = np.random.default_rng(0)
    shape = (12, 10)
    train = {f"t{k}.npy": rng.normal(40.0, 200.0, shape).astype(np.float32) for k in range(3)}
    organ = np.zeros(shape, dtype=bool)
    organ[3:7, 2:5] = True
    _ct_folder(tmp_path / "train", train, {k: organ for k in train}, {k: int(k[1] == "1") for k in train})
    slices = {"b.npy": rng.normal(0.0, 300.0, shape), "a.npy": rng.normal(100.0, 300.0, shape).astype(np.float32)}
    masks = {"b.png": organ, "a.npy": np.zeros(shape, dtype=np.uint8)}  # a .png mask for an .npy slice; empty mask
    _ct_folder(tmp_path / "test", slices, masks, {"b.npy": 1, "a.npy": 0})
    data = D.load("ct_contrast", split="test", data_dir=tmp_path)
    assert data.x.shape == (2, 1, 12, 10) and data.x.dtype == torch.float32 and data.y.tolist() == [0, 1]
    assert data.info["files"] == ["a.npy", "b.npy"] and data.info["stats_from"] == "train"  # file-name order
    reference = np.stack(list(train.values())).astype(np.float64)
    (mean,), (std,) = data.info["mean"], data.info["std"]
    assert np.isclose(mean, reference.mean()) and np.isclose(std, reference.std())
    expected = (np.stack([slices["a.npy"], slices["b.npy"]]) - reference.mean()) / reference.std()
    assert np.allclose(data.x[:, 0].numpy(), expected, atol=1e-4)
    assert torch.equal(data.mask, torch.tensor(np.stack([np.zeros(shape, bool), organ])))
    assert data.boxes.tolist() == [[0, 0, 0, 0], [2, 3, 5, 7]]  # (x0, y0, x1, y1), end exclusive; empty → zeros
    own = D.ct_contrast(split="train", data_dir=tmp_path)
    assert own.info["stats_from"] == "train" and abs(own.x.mean().item()) < 1e-5
    given = D.ct_contrast(data_dir=tmp_path, mean=100.0, std=(50.0,))
    assert given.info["stats_from"] == "given" and np.allclose(given.x[0, 0].numpy(), (slices["a.npy"] - 100) / 50,
                                                                atol=1e-4)
    (tmp_path / "test" / "labels.csv").write_text("file,label\nb.npy,1\n")
    with pytest.raises(ValueError, match="a.npy"):  # a slice without a label
        D.ct_contrast(data_dir=tmp_path)


def test_ct_contrast_missing_folder_and_pickled_npy(tmp_path):
    with pytest.raises(FileNotFoundError, match="labels.csv") as err:
        D.load("ct_contrast", split="test", data_dir=tmp_path / "nothing")
    assert "images/<name>.npy" in str(err.value) and str(tmp_path / "nothing") in str(err.value)
    base = tmp_path / "test"
    _ct_folder(base, {"s.npy": np.zeros((4, 4), np.float32)}, {"s.npy": np.ones((4, 4), bool)}, {"s.npy": 1})
    np.save(base / "images" / "s.npy", np.array([{"code": "runs on load"}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="pickled"):
        D.ct_contrast(data_dir=tmp_path)
    np.save(base / "images" / "s.npy", np.zeros((2, 4, 4), np.float32))
    with pytest.raises(ValueError, match="2-D"):
        D.ct_contrast(data_dir=tmp_path)
    # a 16-bit grey PNG slice, its mask under the same stem as .npy
    (base / "images" / "s.npy").unlink()
    values = (np.arange(16).reshape(4, 4) * 1000).astype(np.uint16)
    fake.write_image(base / "images" / "s.png", values)
    (base / "labels.csv").write_text("file,label\ns.png,1\n")
    data = D.ct_contrast(data_dir=tmp_path)
    (mean,), (std,) = data.info["mean"], data.info["std"]
    assert data.info["stats_from"] == "test" and data.mask.all() and data.y.tolist() == [1]
    assert np.allclose(data.x[0, 0].numpy() * std + mean, values, atol=1e-2)
