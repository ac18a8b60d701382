"""``faithlab evaluate`` at its edges (issue 54, item 5), each a one-line error naming the flag, never a traceback:
an unreadable image names ``--images`` and the file wherever it sorts (``--skip-unreadable`` goes on without it and
lists it in skipped.txt); an explainer whose optional package is missing names ``--explainers`` and the extra; no
``--weights`` needs ``--random-weights``; ``--n-images`` samples evenly over the classes, seeded; ``--device cuda``
without a GPU suggests ``--device cpu``."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from cli_runs import one_line_error

import faithlab as fl
from faithlab import _optional, cli

SIDE = 12


class Tiny(nn.Module):
    """A tiny CNN of two classes with its own preprocessing (12 px), counting its calls."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv, self.fc = nn.Conv2d(3, 4, 3, padding=1), nn.Linear(4, 2)
        self.calls = 0
        self.faithlab_preprocess = fl.models.Preprocess(resize=SIDE, crop=(SIDE, SIDE), mean=(0.0, 0.0, 0.0),
                                                        std=(1.0, 1.0, 1.0))
        self.eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return self.fc(torch.relu(self.conv(x)).mean((2, 3)))


@pytest.fixture
def model(monkeypatch):
    net = Tiny()
    monkeypatch.setattr(fl.models, "load", lambda spec, weights=None: net)
    return net


def _folder(root: Path, counts: dict[str, int]) -> Path:
    from PIL import Image

    rng = np.random.default_rng(0)
    for cls, k in counts.items():
        (root / cls).mkdir(parents=True)
        for i in range(k):
            Image.fromarray(rng.integers(0, 256, (SIDE, SIDE, 3), dtype=np.uint8)).save(root / cls / f"{i}.png")
    return root


def _args(images: Path, out: Path, *extra: str, weights: bool = False) -> list[str]:
    return ["evaluate", "--model", "tiny", *([] if weights else ["--random-weights"]), "--images", str(images),
            "--out", str(out), "--explainers", "saliency", "--metrics", "fid+", "--set", "sparsity=[0.5]",
            "--maps", "0", "--no-sanity", "--yes", *extra]


@pytest.mark.parametrize("name, content", [("a/000.png", b"not an image at all"),  # sorted first
                                           ("b/zzz.png", None)])  # sorted last: a truncated PNG
def test_an_unreadable_image_is_named_with_images(tmp_path, model, capsys, name, content):
    images = _folder(tmp_path / "images", {"a": 2, "b": 2})
    bad = images / name
    bad.write_bytes(content if content is not None else (images / "a" / "0.png").read_bytes()[:60])
    assert cli.main(_args(images, tmp_path / "out", "--estimate-only")) == 2
    one_line_error(capsys, "--images", str(bad), "--skip-unreadable")
    assert model.calls == 0  # refused before any work


def test_skip_unreadable_goes_on_and_lists_what_it_skipped(tmp_path, model, capsys):
    """Class a holds one readable and one corrupt image: with --n-images 3 the balanced order reaches the corrupt
    one, which is left out, and a third readable image (of b) takes its place."""
    images = _folder(tmp_path / "images", {"a": 1, "b": 4})
    (images / "a" / "bad.png").write_bytes(b"\x89PNG\r\n\x1a\n broken")
    out = tmp_path / "out"
    assert cli.main(_args(images, out, "--n-images", "3", "--skip-unreadable")) == 0
    printed = capsys.readouterr().out
    assert "skipped 1 unreadable image(s) (--skip-unreadable): a/bad.png" in printed
    lines = (out / "skipped.txt").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1 and lines[0].startswith("a/bad.png\t") and "UnidentifiedImageError" in lines[0]
    rows = pd.read_csv(out / "report.csv")
    assert sorted(rows["sample"].unique()) == [0, 1, 2]  # three images were evaluated


@pytest.mark.parametrize("method, module, extra", [("xrai", "saliency", "saliency"),
                                                   ("extremal_perturbation", "torchray", "torchray")])
def test_an_explainer_without_its_extra_names_the_extra(tmp_path, model, capsys, monkeypatch, method, module, extra):
    for name in [m for m in sys.modules if m == module or m.startswith(module + ".")] + [module]:
        monkeypatch.setitem(sys.modules, name, None)  # import of <module> fails as if not installed
    images = _folder(tmp_path / "images", {"a": 1, "b": 1})
    args = _args(images, tmp_path / "out", "--estimate-only")
    args[args.index("--explainers") + 1] = method
    assert cli.main(args) == 2
    one_line_error(capsys, "--explainers", method, f"pip install 'faithlab[{extra}]'")


def test_a_missing_extra_elsewhere_is_one_line_too():
    err = ModuleNotFoundError("No module named 'matplotlib'", name="matplotlib")
    assert _optional.missing(err, "the report") == "the report needs matplotlib: pip install 'faithlab[report]'"
    assert _optional.missing(ModuleNotFoundError("x", name="numpyy"), "the report") is None  # not an extra
    assert _optional.missing(ValueError("matplotlib"), "the report") is None


def test_no_weights_needs_random_weights(tmp_path, model, capsys):
    images = _folder(tmp_path / "images", {"a": 1, "b": 1})
    assert cli.main(_args(images, tmp_path / "out", "--estimate-only", weights=True)) == 2
    one_line_error(capsys, "--weights", "--random-weights")
    assert model.calls == 0
    assert cli.main(_args(images, tmp_path / "out", "--estimate-only")) == 0
    assert "(random weights drawn from --seed 0)" in capsys.readouterr().out
    weights = tmp_path / "w.pt"
    weights.write_bytes(b"")
    assert cli.main(_args(images, tmp_path / "out", "--estimate-only", "--weights", str(weights))) == 2
    one_line_error(capsys, "--random-weights", "--weights")


def _sampled(tmp_path, monkeypatch, images: Path, *extra: str) -> list[str]:
    """The files --n-images picks (the estimate is replaced by a stub that records them)."""
    seen = []

    def stub(args, model, data, n, *rest, **keywords):
        seen.append(list(data.files))
        return pd.DataFrame()

    monkeypatch.setattr(cli.estimate, "estimate", stub)
    assert cli.main(_args(images, tmp_path / "out", "--estimate-only", *extra)) == 0
    return seen[0]


def test_n_images_samples_evenly_over_the_classes(tmp_path, model, monkeypatch, capsys):
    images = _folder(tmp_path / "images", {"a": 5, "b": 2, "c": 4})
    six = _sampled(tmp_path, monkeypatch, images, "--n-images", "6")
    assert Counter(f.split("/")[0] for f in six) == {"a": 2, "b": 2, "c": 2}
    assert six == sorted(six)  # evaluated in file order
    assert six != ["a/0.png", "a/1.png", "a/2.png", "a/3.png", "a/4.png", "b/0.png"]  # not the first six paths
    assert _sampled(tmp_path, monkeypatch, images, "--n-images", "6") == six  # seeded
    others = {tuple(_sampled(tmp_path, monkeypatch, images, "--n-images", "6", "--seed", str(s))) for s in (1, 2, 3)}
    assert others - {tuple(six)}  # another seed, other images within a class
    eight = _sampled(tmp_path, monkeypatch, images, "--n-images", "8")  # b has only 2: a and c share the rest
    assert Counter(f.split("/")[0] for f in eight) == {"a": 3, "b": 2, "c": 3}
    assert len(_sampled(tmp_path, monkeypatch, images)) == 11  # no --n-images: all
    capsys.readouterr()
    assert cli.main(["evaluate", "--help"]) == 0
    assert "round-robin over the class folders" in " ".join(capsys.readouterr().out.split())


def test_balanced_order_unlabelled_is_one_seeded_draw(tmp_path):
    images = _folder(tmp_path / "images", {"a": 3, "b": 3})
    pre = Tiny().faithlab_preprocess
    flat = fl.data.image_folder(images, preprocess=pre, labels=None)
    order = flat.balanced_order(0)
    assert sorted(order) == list(range(6)) and order == flat.balanced_order(0) and order != list(range(6))
    labelled = fl.data.image_folder(images, preprocess=pre)
    assert [int(labelled.labels[i]) for i in labelled.balanced_order(0)] == [0, 1, 0, 1, 0, 1]
    picked = labelled.sample(4, seed=0)
    assert len(picked) == 4 and picked.classes == ["a", "b"] and picked.info["files"] == picked.files
    assert picked.labels.tolist() == [0, 0, 1, 1]


def test_cuda_without_a_gpu_suggests_cpu(tmp_path, model, capsys, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    images = _folder(tmp_path / "images", {"a": 1, "b": 1})
    for device in ("cuda", "cuda:1"):
        assert cli.main(_args(images, tmp_path / "out", "--estimate-only", "--device", device)) == 2
        one_line_error(capsys, "--device", device, "--device cpu")
    assert model.calls == 0
