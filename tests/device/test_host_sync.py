"""No host synchronisation inside the hot loops (issue 52, item 4).

On a GPU every read of a device value by the host (``.item()``, ``.tolist()``, ``.cpu()``, ``.numpy()``, ``bool``,
``int``, ``float`` or an index taken from a tensor, ``torch.equal``, ``torch.cuda.synchronize``) waits for every
kernel queued before it: one per forward chunk stalls the device once per chunk. Each call below runs twice on the
same inputs, with a batch size giving k forward chunks and with a quarter of it (about 4k chunks): the number of host
synchronisations must not grow with the chunks (a constant per call is allowed: argument checks, one finiteness
check after the loop). The "auto" batch size times its chunks, and so syncs, by design: it is not tested here.

The explainer is a bare gradient (no check of its own): the counts are the library's.
"""

from __future__ import annotations

import collections
import sys

import pytest
import torch
from oracles import linear_kfold, metric_call, small_cnn
from torch.overrides import TorchFunctionMode

import faithlab as fl
from faithlab.metrics import fewclass
from faithlab.metrics.registry import METRICS

B, C, SIDE, K = 8, 2, 8, 3
BIG, SMALL = 8, 2  # forward inputs per call: k chunks, then about 4k
FAST = {"sparsity": [0.5], "n_samples": 2, "n_subsets": 4, "n_neighbours": 2, "saco_k": 4, "edge": 4,
        "fewclass_fractions": [0.0, 0.5, 1.0], "fewclass_grid": list(fewclass.QUICK_GRID[::24]), "seed": 1}
SYNCS = {"item", "tolist", "numpy", "cpu", "__bool__", "__int__", "__float__", "__index__", "equal"}
LIB = fl.__file__.rsplit("/", 1)[0] + "/"


class HostSyncs(TorchFunctionMode):
    """Counts the Tensor methods and torch functions that read a device value on the host, by the line of
    ``lib/faithlab`` that asked for it (``where``)."""

    def __init__(self):
        super().__init__()
        self.where: collections.Counter = collections.Counter()

    @property
    def total(self) -> int:
        return sum(self.where.values())

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in SYNCS:
            self.where[(_caller(), name)] += 1
        return func(*args, **(kwargs or {}))


def _caller() -> str:
    frame = sys._getframe(2)
    while frame is not None and not frame.f_code.co_filename.startswith(LIB):
        frame = frame.f_back
    return "outside faithlab" if frame is None else f"{frame.f_code.co_filename[len(LIB):]}:{frame.f_lineno}"


def _gradient(model, inputs, target):
    """A saliency map without checks of its own (no host sync): the syncs counted are the library's."""
    with torch.enable_grad():
        z = inputs.detach().requires_grad_(True)
        return torch.autograd.grad(model(z).gather(1, target[:, None]).sum(), z)[0]


@pytest.fixture(scope="module")
def data():
    g = torch.Generator().manual_seed(2)
    x = torch.randn(B, C, SIDE, SIDE, generator=g)
    return {"model": small_cnn(in_channels=C, side=SIDE, n_classes=K), "x": x,
            "y": torch.randint(0, K, (B,), generator=g), "a": torch.randn(B, C, SIDE, SIDE, generator=g),
            "kfold": linear_kfold(x, K)}


def _count(call, data, monkeypatch) -> tuple[HostSyncs, int]:
    """The host syncs of ``call()`` and the forward calls of the models it ran."""
    calls = [0]
    models = [data["model"], *data["kfold"].models]
    hooks = [m.register_forward_pre_hook(lambda *_: calls.__setitem__(0, calls[0] + 1)) for m in models]
    counter = HostSyncs()
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: counter.where.update([("", "synchronize")]))
    fewclass.clear_cache()  # the Few-class search runs in each call (a cached one would sync less)
    try:
        with counter:
            call()
    finally:
        for h in hooks:
            h.remove()
    return counter, calls[0]


def _grows(call, data, monkeypatch) -> None:
    few, k = _count(lambda: call(BIG), data, monkeypatch)
    many, k4 = _count(lambda: call(SMALL), data, monkeypatch)
    assert k >= 2 and k4 >= 3 * k, f"the batch sizes do not give k and ~4k chunks: {k}, {k4}"
    more = {site: n - few.where[site] for site, n in many.where.items() if n != few.where[site]}
    assert many.total == few.total, f"{few.total} host syncs in {k} chunks, {many.total} in {k4}: {more}"


@pytest.mark.parametrize("name", list(METRICS))
def test_a_metric_syncs_the_same_whatever_its_chunks(name, data, monkeypatch):
    model = data["model"]  # FFid's fine-tuned model: the same net here (its calls are counted)

    def call(batch_size):
        return metric_call(name, model, data["x"], data["y"], data["a"], batch_size=batch_size, explainer=_gradient,
                           kfold=data["kfold"], options=FAST)

    _grows(call, data, monkeypatch)


def test_removal_curve_syncs_the_same_whatever_its_chunks(data, monkeypatch):
    _grows(lambda bs: fl.perturb.removal_curve(data["model"], data["x"], data["a"], fractions=[0, 0.25, 0.5, 1.0],
                                               batch_size=bs), data, monkeypatch)


def test_evaluate_syncs_the_same_whatever_its_chunks(data, monkeypatch):
    _grows(lambda bs: fl.evaluate(data["model"], data["x"], data["y"], {"E": data["a"]}, explainer=_gradient,
                                  kfold=data["kfold"], finetuned=data["model"], batch_size=bs, progress=False,
                                  hints=False, **FAST), data, monkeypatch)
