"""The device path without a GPU (issue 52, item 4): fake devices on the CPU.

The meta seam: a tensor that the library makes without ``device=`` lands on "meta", a device without data (the next
operation mixing it with a CPU tensor, or reading one of its values, fails). Such a tensor is exactly one that would
be made on the wrong device (the CPU) when the inputs are on a GPU. Intentional CPU tensors (draws from a CPU
``torch.Generator``, host-side indices, validated fractions) say ``device="cpu"``; the hot paths make theirs on
``x.device``.

The fake GPU (:class:`FakeDevices`): "cuda" is the CPU, tracked. A tensor moved or made on "cuda", and whatever is
computed from one, reports ``device`` cuda:0; an operation mixing it with a CPU tensor fails as torch fails on a GPU
(0-dim CPU tensors, indexing and copies excepted), ``.numpy()`` of it fails, and ``torch.cuda`` answers as on a
machine with one GPU. This also catches a CPU tensor made on purpose and never moved to the inputs' device.

(a) every registered metric under ``torch.device("meta")`` as the default device, and on the fake GPU, gives the
CPU's result (on the inputs' device); (b) ``fl.evaluate`` with every metric, an explainer, a fine-tuned model and a
k-fold family, likewise (on the fake GPU at the default batch size, whose GPU branch reads the device's memory);
(c) ``faithlab evaluate --device cpu`` end to end (estimate, metrics, sanity check on a randomised copy, report) with
the tensors made by ``lib/faithlab`` without a device on meta (torch's own, e.g. the DataLoader's seed, stay on the
CPU, as they do beside a GPU); (d) ``faithlab evaluate --device cuda`` end to end on the fake GPU (its CUDA check,
the timing's ``torch.cuda.synchronize``, the model and the images on "cuda"): the report equals (c)'s.
"""

from __future__ import annotations

import copy
import math
import os
import sys
import types
from dataclasses import fields, is_dataclass

import pandas as pd
import pytest
import torch
import torch.utils._device as torch_device
from oracles import Sleepy, image_folder, linear_kfold, metric_call, small_cnn
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten
from torch.utils.weak import WeakIdKeyDictionary

import faithlab as fl
from faithlab import cli
from faithlab.metrics import fewclass
from faithlab.metrics.registry import METRICS

B, C, SIDE, K = 6, 2, 8, 3  # 6 samples: ReCo and MeGe have pairs of both kinds (scores that are not NaN)
FAST = {"sparsity": [0.5], "n_samples": 2, "n_subsets": 4, "n_neighbours": 2, "saco_k": 4, "edge": 4,
        "fewclass_fractions": [0.0, 0.5, 1.0], "fewclass_grid": list(fewclass.QUICK_GRID[::24]), "seed": 1}
LIB = os.path.dirname(fl.__file__) + os.sep
CONSTRUCTORS = torch_device._device_constructors()  # the factories torch.device("meta") as a context redirects
CUDA = torch.device("cuda", 0)
HOST_READS = {"cpu", "tolist", "item", "numpy", "__bool__", "__int__", "__float__", "__index__", "__format__",
              "__repr__", "equal", "numel", "dim", "size", "__len__", "data_ptr", "stride", "is_floating_point",
              "is_complex", "element_size", "get_device"}
MIXED_OK = HOST_READS | {"__get__", "__getitem__", "__setitem__", "copy_", "to", "__deepcopy__", "__reduce_ex__"}


def _is_cuda(value) -> bool:
    return isinstance(value, (torch.device, str)) and torch.device(value).type == "cuda"


class FakeDevices(TorchFunctionMode):
    """The meta seam for ``lib/faithlab`` (a factory it calls without ``device=`` makes a meta tensor) and a fake
    GPU ("cuda" is the CPU, tracked in ``on``; see the module docstring). ``moved`` counts the moves to "cuda"."""

    def __init__(self):
        super().__init__()
        self.on = WeakIdKeyDictionary()
        self.moved = 0

    def gpu(self, t) -> bool:
        return isinstance(t, torch.Tensor) and t in self.on

    def _moved(self, out: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
        out = out.view_as(out) if out is source and not self.gpu(out) else out  # a tensor of its own, as on a GPU
        self.on[out] = True
        self.moved += 1
        return out

    def __torch_function__(self, func, types_, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        name = getattr(func, "__name__", "")
        if name == "__get__" and args and self.gpu(args[0]):  # tensor.device, .is_cuda, .is_cpu
            owner = getattr(func, "__self__", None)
            if owner is torch.Tensor.device:
                return CUDA
            if owner in (torch.Tensor.is_cuda, torch.Tensor.is_cpu):
                return owner is torch.Tensor.is_cuda
        if name == "get_device" and self.gpu(args[0]):
            return 0
        made_on_gpu = _is_cuda(kwargs.get("device"))
        if made_on_gpu:
            kwargs["device"] = torch.device("cpu")
        if name in ("to", "cuda", "cpu") and args:
            rest = args[1:]
            target = kwargs.get("device", next((a for a in rest if isinstance(a, (torch.device, str))), None))
            if name == "cuda" or made_on_gpu or _is_cuda(target) or (rest and self.gpu(rest[0])):
                rest = ("cpu",) if name == "cuda" else tuple("cpu" if _is_cuda(a) else a for a in rest)
                return self._moved(torch.Tensor.to(args[0], *rest, **kwargs), args[0])
            if name == "cpu" or target is not None:  # to the host: not on the GPU any more
                out = func(*args, **kwargs)
                return out.view_as(out) if out is args[0] and self.gpu(out) else out
        if func in CONSTRUCTORS and kwargs.get("device") is None and _from_lib():
            kwargs["device"] = "meta"
        tensors = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
        on_gpu = any(self.gpu(t) for t in tensors)
        if on_gpu and name == "numpy":
            raise TypeError("can't convert cuda:0 device type tensor to numpy (fake GPU). Use Tensor.cpu() to copy "
                            "the tensor to host memory first.")
        if on_gpu and name not in MIXED_OK:
            host = [tuple(t.shape) for t in tensors if not self.gpu(t) and t.ndim > 0 and t.device.type == "cpu"]
            if host:
                raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                                   f"cuda:0 (fake GPU) and cpu! ({name} of CPU tensors of shapes {host[:3]})")
        out = func(*args, **kwargs)
        if (on_gpu or made_on_gpu) and name not in HOST_READS:
            for t in tree_flatten(out)[0]:
                if isinstance(t, torch.Tensor) and t.device.type == "cpu":
                    self.on[t] = True
        return out


def _from_lib() -> bool:
    """Whether the torch call under way comes straight from ``lib/faithlab`` (frame 0: this, 1: the mode)."""
    return sys._getframe(2).f_code.co_filename.startswith(LIB)


@pytest.fixture
def fake_gpu(monkeypatch) -> FakeDevices:
    """A :class:`FakeDevices` and ``torch.cuda`` answering as on a machine with one GPU (``Module.to("cuda")`` marks
    the module's tensors as on it, and so does a deep copy of them)."""
    fake = FakeDevices()
    fake.synced = 0  # torch.cuda.synchronize calls
    module_to, param_copy = torch.nn.Module.to, torch.nn.Parameter.__deepcopy__

    def to(self, *args, **kwargs):
        device = torch._C._nn._parse_to(*args, **kwargs)[0]
        if device is None or device.type != "cuda":
            return module_to(self, *args, **kwargs)
        for t in (*self.parameters(), *self.buffers()):
            fake.on[t] = True
        fake.moved += 1
        return self

    def deepcopy(self, memo):  # a Parameter wraps its data with torch's _make_subclass, which the mode does not see
        out = param_copy(self, memo)
        if fake.gpu(self):
            fake.on[out] = True
        return out

    props = types.SimpleNamespace(name="fake GPU", total_memory=80 * 2**30, multi_processor_count=1)
    monkeypatch.setattr(torch.nn.Module, "to", to)
    monkeypatch.setattr(torch.nn.Parameter, "__deepcopy__", deepcopy)
    for attr, value in {"is_available": lambda: True, "device_count": lambda: 1, "current_device": lambda: 0,
                        "synchronize": lambda device=None: setattr(fake, "synced", fake.synced + 1),
                        "empty_cache": lambda: None, "get_device_properties": lambda device=None: props,
                        "get_rng_state": lambda device="cuda": torch.zeros(16, dtype=torch.uint8, device="cpu"),
                        "set_rng_state": lambda state, device="cuda": None}.items():
        monkeypatch.setattr(torch.cuda, attr, value)
    return fake


def _saliency(model, inputs, target):
    return fl.explainers.explain(model, inputs, target, method="saliency")


@pytest.fixture(scope="module")
def data():
    model = small_cnn(in_channels=C, side=SIDE, n_classes=K)
    g = torch.Generator().manual_seed(2)
    x = torch.randn(B, C, SIDE, SIDE, generator=g)
    y = torch.randint(0, K, (B,), generator=g)
    a = torch.randn(B, C, SIDE, SIDE, generator=g)
    tuned = small_cnn(in_channels=C, side=SIDE, n_classes=K)
    with torch.no_grad():
        tuned[0].weight.mul_(1.5)
    return {"model": model, "x": x, "y": y, "a": a, "kfold": linear_kfold(x, K), "tuned": tuned,
            "index": torch.arange(B)}


def _on_gpu(d: dict) -> dict:
    """d's models, k-fold family and tensors on the fake GPU (copies: d itself stays on the CPU)."""
    out = {k: d[k].to("cuda") for k in ("x", "y", "a")}
    out.update({k: copy.deepcopy(d[k]).to("cuda") for k in ("model", "tuned")})
    out["kfold"] = types.SimpleNamespace(models=[copy.deepcopy(m).to("cuda") for m in d["kfold"].models],
                                         folds=d["kfold"].folds.to("cuda"))
    return {**out, "index": d["index"]}  # the global sample indices stay on the host, as fl.evaluate keeps them


def _same(got, want, where: str = "result") -> None:
    """got equals want bitwise: tensors with the same device, dtype and values (NaN equal to NaN), recursively
    through dicts, sequences and dataclasses."""
    if isinstance(want, torch.Tensor):
        assert isinstance(got, torch.Tensor), where
        assert got.device == want.device and got.dtype == want.dtype, (where, got.device, got.dtype)
        torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True, msg=where)
    elif isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys(), where
        for k in want:
            _same(got[k], want[k], f"{where}[{k!r}]")
    elif isinstance(want, (list, tuple)):
        assert type(got) is type(want) and len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            _same(g, w, f"{where}[{i}]")
    elif is_dataclass(want):
        for f in fields(want):
            _same(getattr(got, f.name), getattr(want, f.name), f"{where}.{f.name}")
    elif isinstance(want, float) and math.isnan(want):
        assert isinstance(got, float) and math.isnan(got), where
    else:
        assert got == want, where


def _metric(name: str, d: dict):
    model = d["tuned"] if METRICS[name].model == "finetuned" else d["model"]
    return metric_call(name, model, d["x"], d["y"], d["a"], batch_size=4, explainer=_saliency, kfold=d["kfold"],
                       options=FAST, index=d["index"])


@pytest.mark.parametrize("name", list(METRICS))
def test_every_metric_makes_its_tensors_on_the_inputs_device(name, data):
    fewclass.clear_cache()  # the Few-class search must run under the seam, not come from another test's cache
    with torch.device("meta"):
        got = _metric(name, data)
    fewclass.clear_cache()
    _same(got, _metric(name, data), name)


@pytest.mark.parametrize("name", list(METRICS))
def test_every_metric_runs_on_a_gpu(name, data, fake_gpu):
    fewclass.clear_cache()
    with fake_gpu:
        got = _metric(name, _on_gpu(data))
        if isinstance(got, torch.Tensor):
            assert fake_gpu.gpu(got), f"{name}'s scores are not on the inputs' device"
            got = got.cpu()
    fewclass.clear_cache()
    _same(got, _metric(name, data), name)


def _evaluate(d: dict, batch_size):
    return fl.evaluate(d["model"], d["x"], d["y"], explainer={"saliency": _saliency}, finetuned=d["tuned"],
                       kfold=d["kfold"], batch_size=batch_size, progress=False, hints=False, **FAST)


def test_evaluate_makes_its_tensors_on_the_inputs_device(data):
    fewclass.clear_cache()
    with torch.device("meta"):
        got = _evaluate(data, 4)
    assert set(got["metric"]) == set(METRICS)  # every metric, the dataset-level ones included
    fewclass.clear_cache()
    pd.testing.assert_frame_equal(got, _evaluate(data, 4))


def test_evaluate_runs_on_a_gpu(data, fake_gpu):
    """At the default batch size, whose GPU branch sizes the chunks by the device's memory."""
    fewclass.clear_cache()
    with fake_gpu:
        got = _evaluate(_on_gpu(data), None)
    assert set(got["metric"]) == set(METRICS)
    fewclass.clear_cache()
    pd.testing.assert_frame_equal(got, _evaluate(data, None))


SETTINGS = {"sparsity": "[0.5]", "n_samples": "2", "n_subsets": "4", "n_neighbours": "2", "saco_k": "4"}
COMMAND_METRICS = ["fid+", "rfid+", "saco", "aopc", "mu_fidelity", "s_avg", "le-mo"]  # Few-class's search: (a), (b)


def _command(images, out, device: str, metrics: list[str], *extra: str) -> list[str]:
    sets = [a for k, v in SETTINGS.items() for a in ("--set", f"{k}={v}")]
    return ["evaluate", "--model", "tiny", "--random-weights", "--images", str(images), "--out", str(out),
            "--explainers", "saliency", "--metrics", ",".join(metrics), "--batch-size", "2", "--device", device,
            "--yes", *sets, *extra]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return image_folder(tmp_path_factory.mktemp("seam") / "images", SIDE)


@pytest.fixture(scope="module")
def cpu_report(folder, tmp_path_factory):
    """``faithlab evaluate --device cpu`` under the meta seam (four images read in two chunks, the estimate, the
    metrics, the sanity check on a randomised copy, the report) → its report.csv."""
    out = tmp_path_factory.mktemp("cpu") / "report"
    with pytest.MonkeyPatch.context() as mp:
        net = Sleepy(0.0, SIDE)
        mp.setattr(fl.models, "load", lambda spec, weights=None: net)
        fewclass.clear_cache()
        with FakeDevices():
            assert cli.main(_command(folder, out, "cpu", COMMAND_METRICS, "--maps", "0")) == 0
    return pd.read_csv(out / "report.csv")


def test_the_command_makes_its_tensors_on_the_device(cpu_report):
    assert set(cpu_report["metric"]) == set(COMMAND_METRICS) and len(cpu_report) == 4 * len(COMMAND_METRICS)
    assert cpu_report["score"].notna().any()


def test_the_command_runs_on_a_gpu(folder, tmp_path, monkeypatch, fake_gpu, cpu_report):
    net = Sleepy(0.0, SIDE)
    monkeypatch.setattr(fl.models, "load", lambda spec, weights=None: net)
    out = tmp_path / "report"
    fewclass.clear_cache()
    with fake_gpu:
        assert cli.main(_command(folder, out, "cuda", ["fid+", "saco"], "--maps", "1")) == 0
    assert fake_gpu.gpu(next(net.parameters())) and fake_gpu.synced > 0  # on "cuda", its timings synchronised
    got = pd.read_csv(out / "report.csv")
    pd.testing.assert_frame_equal(got, cpu_report[cpu_report["metric"].isin(["fid+", "saco"])].reset_index(drop=True))
