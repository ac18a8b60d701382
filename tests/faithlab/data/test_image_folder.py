"""fl.data.image_folder: class subfolders, a flat folder with a labels CSV, a flat unlabelled folder, and every error
naming the caller's argument (tiny PNGs written with PIL into tmp_path)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from PIL import Image

import faithlab as fl

PREP = fl.models.Preprocess(resize=(8, 8), crop=None, mean=(0.5, 0.5, 0.5), std=(0.25, 0.25, 0.25))


def _png(path, seed: int, size=(12, 10)) -> np.ndarray:
    """Write a random RGB PNG; return its pixels (H, W, 3) uint8."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pixels = np.random.default_rng(seed).integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
    Image.fromarray(pixels).save(path)
    return pixels


@pytest.fixture
def classes_root(tmp_path):
    """root/dog/{a,b}.png, root/cat/{c,d,e}.png (and a stray text file, a hidden file, an empty folder)."""
    root = tmp_path / "imgs"
    for i, rel in enumerate(["dog/a.png", "dog/b.PNG", "cat/c.png", "cat/d.jpg", "cat/e.png"]):
        _png(root / rel, i)
    (root / "cat" / "notes.txt").write_text("not an image")
    (root / "cat" / ".hidden.png").write_bytes(b"")
    (root / "empty").mkdir()
    return root


@pytest.fixture
def flat_root(tmp_path):
    root = tmp_path / "flat"
    for i in range(4):
        _png(root / f"img{i}.png", 10 + i)
    return root


def test_class_subfolders_give_sorted_labels_and_preprocessed_items(classes_root):
    data = fl.data.image_folder(classes_root, preprocess=PREP)
    assert data.classes == ["cat", "dog"] and data.labelled and len(data) == 5
    assert data.files == ["cat/c.png", "cat/d.jpg", "cat/e.png", "dog/a.png", "dog/b.PNG"]
    assert data.labels.tolist() == [0, 0, 0, 1, 1]
    x, y = data[3]
    with Image.open(classes_root / "dog/a.png") as image:
        assert torch.equal(x, PREP(image)) and int(y) == 1
    assert data.info["mean"] == (0.5, 0.5, 0.5) and data.info["std"] == (0.25, 0.25, 0.25)
    assert data.info["files"] == data.files and data.info["n_classes"] == 2 and data.info["labels"] == "folders"


def test_classes_argument_sets_the_label_order(classes_root):
    data = fl.data.image_folder(classes_root, preprocess=PREP, classes=["bird", "dog", "cat"])
    assert data.classes == ["bird", "dog", "cat"] and data.info["n_classes"] == 3
    assert dict(zip(data.files, data.labels.tolist()))["cat/c.png"] == 2
    assert dict(zip(data.files, data.labels.tolist()))["dog/a.png"] == 1


def test_loader_keeps_file_order_and_tensors_match_items(classes_root):
    data = fl.data.image_folder(classes_root, preprocess=PREP)
    batches = list(data.loader(batch_size=2))
    assert [len(b[0]) for b in batches] == [2, 2, 1]
    x = torch.cat([b[0] for b in batches])
    y = torch.cat([b[1] for b in batches])
    assert torch.equal(x, torch.stack([data[i][0] for i in range(5)])) and y.tolist() == data.labels.tolist()
    td = data.tensors(3)
    assert isinstance(td, fl.data.TensorData) and td.y.tolist() == [0, 0, 0]
    assert torch.equal(td.x, x[:3]) and td.info["files"] == data.files[:3] and td.n_classes == 2
    assert td.index.tolist() == [0, 1, 2]


def test_labels_none_ignores_the_subfolders(classes_root):
    data = fl.data.image_folder(classes_root, preprocess=PREP, labels=None)
    assert not data.labelled and data.classes is None and data.labels is None
    assert isinstance(data[0], torch.Tensor) and data[0].shape == (3, 8, 8)


def test_flat_folder_is_unlabelled_and_tensors_needs_labels_or_a_model(flat_root):
    data = fl.data.image_folder(flat_root, preprocess=PREP)
    assert not data.labelled and data.files == [f"img{i}.png" for i in range(4)]
    batch = next(iter(data.loader(batch_size=4)))
    assert isinstance(batch, torch.Tensor) and batch.shape == (4, 3, 8, 8)
    with pytest.raises(ValueError, match="no labels.*labels=.*model="):
        data.tensors()
    torch.manual_seed(0)
    model = fl.models.build("small_cnn", n_classes=3).eval()
    td = data.tensors(model=model)
    with torch.no_grad():
        expected = model(batch).argmax(1)
    assert td.y.tolist() == expected.tolist() and td.info["labels"] == "predictions" and td.n_classes == 3


def test_flat_folder_with_a_csv_of_names_and_ints(flat_root, tmp_path):
    names = tmp_path / "names.csv"
    names.write_text("file,label\nimg2.png,zebra\nimg0.png,ant\nimg1.png,zebra\nimg3.png,ant\n")
    data = fl.data.image_folder(flat_root, preprocess=PREP, labels=names)
    assert data.classes == ["ant", "zebra"] and data.labels.tolist() == [0, 1, 1, 0]
    assert data.info["labels"] == str(names)
    ints = tmp_path / "ints.csv"
    ints.write_text("file,label\nimg0.png,4\nimg1.png,0\nimg2.png,1\nimg3.png,4\n")
    data = fl.data.image_folder(flat_root, preprocess=PREP, labels=ints)
    assert data.classes is None and data.labels.tolist() == [4, 0, 1, 4] and data.info["n_classes"] == 5
    data = fl.data.image_folder(flat_root, preprocess=PREP, labels=names, classes=["zebra", "ant"])
    assert data.labels.tolist() == [1, 0, 0, 1]


def test_preprocess_is_the_models_own(flat_root):
    prep = fl.models.preprocessing("torchvision:resnet18")
    data = fl.data.image_folder(flat_root, preprocess=prep)
    assert data[0].shape == (3, 224, 224) and data.info["mean"] == prep.mean and data.preprocess is prep


# ------------------------------------------------------------------------------------------------------- errors
def test_missing_and_empty_root(tmp_path):
    with pytest.raises(FileNotFoundError, match="root"):
        fl.data.image_folder(tmp_path / "nope", preprocess=PREP)
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "readme.txt").write_text("x")
    with pytest.raises(ValueError, match="root .* holds no images"):
        fl.data.image_folder(tmp_path / "empty", preprocess=PREP)


def test_mixed_flat_and_subfolders(classes_root):
    _png(classes_root / "loose.png", 99)
    with pytest.raises(ValueError, match="root .* mixes images .*loose.png.* and class subfolders"):
        fl.data.image_folder(classes_root, preprocess=PREP)


def test_csv_errors_name_the_labels_argument(flat_root, tmp_path):
    cases = {
        "file,label\nimg0.png,a\nimg1.png,a\nimg2.png,a\nimg3.png,a\nghost.png,b\n": "not images in the folder.*ghost",
        "file,label\nimg0.png,a\nimg1.png,a\n": "no label for 2 image.*img2.png",
        "name,class\nimg0.png,a\n": "columns 'file' and 'label'",
        "file,label\nimg0.png,a\nimg1.png,1\nimg2.png,a\nimg3.png,a\n": "mixes integer labels and class names",
        "file,label\nimg0.png,a\nimg0.png,a\nimg2.png,a\nimg3.png,a\n": "twice",
    }
    for i, (text, match) in enumerate(cases.items()):
        path = tmp_path / f"bad{i}.csv"
        path.write_text(text)
        with pytest.raises(ValueError, match=f"labels: .*{match}"):
            fl.data.image_folder(flat_root, preprocess=PREP, labels=path)
    good = tmp_path / "good.csv"
    good.write_text("file,label\nimg0.png,cat\nimg1.png,dog\nimg2.png,cow\nimg3.png,cat\n")
    with pytest.raises(ValueError, match="labels: .*unknown class name 'cow'"):
        fl.data.image_folder(flat_root, preprocess=PREP, labels=good, classes=["cat", "dog"])
    out_of_range = tmp_path / "range.csv"
    out_of_range.write_text("file,label\nimg0.png,0\nimg1.png,1\nimg2.png,2\nimg3.png,0\n")
    with pytest.raises(ValueError, match="labels: .*label 2, outside 0..1"):
        fl.data.image_folder(flat_root, preprocess=PREP, labels=out_of_range, classes=["cat", "dog"])
    with pytest.raises(FileNotFoundError, match="labels"):
        fl.data.image_folder(flat_root, preprocess=PREP, labels=tmp_path / "absent.csv")


def test_unknown_subfolder_class_and_bad_arguments(classes_root):
    with pytest.raises(ValueError, match="classes .* do not include the subfolders \\['dog'\\]"):
        fl.data.image_folder(classes_root, preprocess=PREP, classes=["cat", "bird"])
    with pytest.raises(ValueError, match="classes must be"):
        fl.data.image_folder(classes_root, preprocess=PREP, classes=["cat", "cat"])
    with pytest.raises(TypeError, match="preprocess must be callable"):
        fl.data.image_folder(classes_root, preprocess=None)
    with pytest.raises(ValueError, match="extensions"):
        fl.data.image_folder(classes_root, preprocess=PREP, extensions="png")
    with pytest.raises(TypeError, match="labels must be"):
        fl.data.image_folder(classes_root, preprocess=PREP, labels=3)
    with pytest.raises(ValueError, match="batch_size"):
        fl.data.image_folder(classes_root, preprocess=PREP).loader(batch_size=0)


def test_unreadable_image_is_named(flat_root):
    (flat_root / "img1.png").write_bytes(b"not a png at all")
    data = fl.data.image_folder(flat_root, preprocess=PREP)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(192, 2)).eval()
    assert torch.equal(data[0], data.tensors(1, model=model).x[0])  # the files before it still read
    with pytest.raises(ValueError, match="root: the file 'img1.png' .* is not a readable image"):
        data[1]
    with pytest.raises(ValueError, match="img1.png"):
        list(data.loader(batch_size=2))


def test_images_of_different_sizes_need_a_fixed_size_preprocess(tmp_path):
    _png(tmp_path / "a" / "x.png", 0, size=(8, 8))
    _png(tmp_path / "a" / "y.png", 1, size=(10, 6))
    loose = dataclasses.replace(PREP, resize=None)
    data = fl.data.image_folder(tmp_path, preprocess=loose)
    with pytest.raises(ValueError, match="preprocess gives images of different sizes"):
        data.tensors()
    with pytest.raises(ValueError, match="preprocess gives images of different sizes"):
        list(data.loader())
    assert fl.data.image_folder(tmp_path, preprocess=PREP).tensors().x.shape == (2, 3, 8, 8)


def test_links_are_followed_without_loops_and_pipes_are_not_images(tmp_path):
    """A class folder that is a link is read; links back to a class folder or above root are not walked again (on
    7507507 torchvision's walk followed them round and round, and the listing never ended); a named pipe called
    x.png, or a link to one, is not an image (opening it would block); a hidden folder (.ipynb_checkpoints) is skipped; nested
    folders under a class keep the class's label."""
    import os

    elsewhere = tmp_path / "elsewhere"
    _png(elsewhere / "w.png", 9)
    root = tmp_path / "root"
    _png(root / "cat/a.png", 0)
    _png(root / "cat/2024/june/b.png", 1)
    _png(root / "cat/.ipynb_checkpoints/a-checkpoint.png", 2)
    os.symlink("..", root / "cat/up")
    os.symlink("../cat", root / "cat/again")
    os.symlink("/", root / "cat/filesystem")
    os.mkfifo(root / "cat/pipe.png")
    os.symlink("pipe.png", root / "cat/to_pipe.png")  # a link to the pipe blocks the same way
    os.symlink(str(elsewhere), root / "dog")
    data = fl.data.image_folder(root, preprocess=PREP)
    assert data.files == ["cat/2024/june/b.png", "cat/a.png", "dog/w.png"]
    assert data.labels.tolist() == [0, 0, 1] and data.classes == ["cat", "dog"]


def test_folders_that_cannot_be_listed(tmp_path, monkeypatch):
    """A class folder (or one below it) that cannot be listed is left out with a warning and named in
    info['unlisted'] (lost+found at the top of a drive must not stop the others); root itself raises ValueError
    naming it. Permissions are simulated (root reads every folder), with PermissionError from os.scandir."""
    import os

    from faithlab.data import folder as folder_module

    root = tmp_path / "root"
    _png(root / "cat/a.png", 0)
    _png(root / "dog/b.png", 1)
    (root / "lost+found").mkdir()
    _png(root / "cat/private/c.png", 2)
    real = os.scandir
    locked = {str(root / "lost+found"), str(root / "cat/private")}

    def scandir(path="."):
        if str(path) in locked:
            raise PermissionError(13, "Permission denied")
        return real(path)

    monkeypatch.setattr(folder_module.os, "scandir", scandir)
    with pytest.warns(UserWarning, match=r"2 folder\(s\) of .* cannot be listed and are left out: cat/private/"):
        data = fl.data.image_folder(root, preprocess=PREP)
    assert data.files == ["cat/a.png", "dog/b.png"] and data.classes == ["cat", "dog"]
    assert data.info["unlisted"] == ["cat/private/: PermissionError: Permission denied",
                                     "lost+found/: PermissionError: Permission denied"]
    assert data.subset([1]).info["unlisted"] == data.info["unlisted"]
    locked.add(str(root))
    with pytest.raises(ValueError, match=r"root '.*root' cannot be listed \(PermissionError"):
        fl.data.image_folder(root, preprocess=PREP)
