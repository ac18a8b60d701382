"""``faithlab evaluate --weights FILE`` with a file the weights-only reader refuses: one line naming --weights and the
file that says only what is wrong with it, never torch's advice to read it again without the weights-only
restriction (no "weights_only", "False" or "trust"), and nothing of the file's code run; torch's "Detected pickle
protocol" warning is not printed either."""

from __future__ import annotations

import pickle
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import faithlab as fl
from faithlab import _validate, cli


class _Payload:
    """Unpickling this object creates ``marker``: the stand-in for the code a crafted file would run."""

    def __init__(self, marker: Path) -> None:
        self.marker = Path(marker)

    def __reduce__(self):
        return Path.touch, (self.marker,)


def _raw_pickle(path: Path, marker: Path) -> None:
    with path.open("wb") as f:
        pickle.dump({"fc.weight": _Payload(marker)}, f)


def _legacy(path: Path, marker: Path) -> None:
    torch.save({"fc.weight": _Payload(marker)}, path, _use_new_zipfile_serialization=False)


def _truncated(path: Path, marker: Path) -> None:
    torch.save(fl.models.build("small_cnn", n_classes=2).state_dict(), path)
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])


def _numpy_scalar(path: Path, marker: Path) -> None:
    torch.save({"fc.weight": torch.zeros(2, 4), "step": np.float64(3.0)}, path)


CASES = {  # how the file is made, what the line says is wrong with it
    "raw pickle": (_raw_pickle, "it is a pickle of objects that a weights-only read does not build"),
    "legacy torch.save": (_legacy, "which is neither a tensor nor a plain container"),  # it needs getattr
    "truncated": (_truncated, "the file is damaged or is not a torch checkpoint"),
    "numpy scalar": (_numpy_scalar, "it needs numpy."),  # numpy._core.multiarray.scalar
}


@pytest.fixture(scope="module")
def images(tmp_path_factory) -> Path:
    from PIL import Image

    root = tmp_path_factory.mktemp("weights-message") / "images"
    (root / "a").mkdir(parents=True)
    Image.fromarray(np.zeros((16, 16, 3), dtype=np.uint8)).save(root / "a" / "0.png")
    return root


def _args(images: Path, weights: Path, out: Path) -> list[str]:
    return ["evaluate", "--model", "small_cnn", "--weights", str(weights), "--images", str(images), "--size", "16",
            "--explainers", "saliency", "--metrics", "fid+", "--maps", "0", "--no-sanity", "--yes", "--out",
            str(out)]


def _says_only_what_is_wrong(line: str, weights: Path, why: str) -> None:
    assert "Traceback" not in line and len(line.strip().splitlines()) == 1, line
    assert line.startswith("faithlab evaluate: error: ") and "--weights" in line and str(weights) in line, line
    assert why in line, (why, line)
    for advice in ("weights_only", "False", "trust"):
        assert advice not in line, (advice, line)


@pytest.mark.parametrize("case", list(CASES))
def test_a_refused_weights_file_is_one_line_without_torchs_advice(images, tmp_path, capsys, case):
    make, why = CASES[case]
    weights, marker = tmp_path / "weights.pt", tmp_path / "ran"
    make(weights, marker)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert cli.main(_args(images, weights, tmp_path / "report")) == 2
    assert not marker.exists(), "the file's code ran"
    _says_only_what_is_wrong(capsys.readouterr().err, weights, why)
    assert not [w for w in caught if "pickle protocol" in str(w.message)]
    assert not (tmp_path / "report").exists()


def test_the_command_prints_the_one_line_alone(images, tmp_path):
    """In a fresh process, where a warning would reach stderr: the raw pickle's one line and nothing else."""
    weights, marker = tmp_path / "weights.pkl", tmp_path / "ran"
    _raw_pickle(weights, marker)
    done = subprocess.run([sys.executable, "-m", "faithlab", *_args(images, weights, tmp_path / "report")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and not marker.exists()
    _says_only_what_is_wrong(done.stderr, weights, CASES["raw pickle"][1])


@pytest.mark.parametrize("err, expected", [
    (pickle.UnpicklingError("Weights only load failed. In PyTorch 2.6, we changed the default value of the "
                            "`weights_only` argument in `torch.load` from `False` to `True`. Re-running `torch.load` "
                            "with `weights_only` set to `False` will likely succeed, but it can result in arbitrary "
                            "code execution. Do it only if you got the file from a trusted source.\n\nTrying to load "
                            "unsupported GLOBAL posix.system whose module posix is blocked."),
     "it needs posix.system, which is neither a tensor nor a plain container"),
    (pickle.UnpicklingError("Weights only load failed. ... WeightsUnpickler error: Unsupported global: GLOBAL "
                            "numpy.dtype was not an allowed global by default."),
     "it needs numpy.dtype, which is neither a tensor nor a plain container"),
    (pickle.UnpicklingError("Weights only load failed. ... Can only build Tensor, Parameter, OrderedDict or types "
                            "allowlisted via `add_safe_globals`, but got <class 'my.Thing'>"),
     "it builds my.Thing, which is neither a tensor nor a plain container"),
    (EOFError(), "the file is damaged or is not a torch checkpoint"),
    (RuntimeError("[enforce fail at inline_container.cc:179] . file in archive is not in a subdirectory: a.txt"),
     "the file is damaged or is not a torch checkpoint (file in archive is not in a subdirectory: a.txt)"),
    (ValueError("Something odd. Re-run with weights_only=False if you trust the file."), "Something odd."),
    (ValueError("Re-run with weights_only=False."), "ValueError"),
])
def test_load_refusal_keeps_only_what_is_wrong(err, expected):
    assert _validate.load_refusal(err) == expected
