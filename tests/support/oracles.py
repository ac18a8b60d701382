"""Oracle models shared by the test files: models whose output is a known function of the features present, so a
metric's exact value can be written down by hand.

- :class:`Additive`: logits ``[s, s − 1]`` with ``s = Σ w·x`` (class 0 always predicted); with all-ones x and a zero
  reference, removing the set S leaves ``s = Σ_{i∉S} w_i`` (``tokens=True``: x ≠ 0 counts as present).
- :class:`Gated`: predicts ``label`` iff fewer than ``m`` of the ``relevant`` units are removed (x = 1 present, 0
  removed); its accuracy under removal is a step function, its Monte-Carlo expectation binomial/hypergeometric.
- :class:`LinearProb`: two classes with ``p(class 0 | x) = q0 + Σ β·x`` exactly, so removing a set G lowers the
  probability by ``Σ_{p∈G} β_p``: probability drops are additive.
- :func:`small_cnn`: a seeded nonlinear net for invariance tests (batch size, device, seeds), no closed form.
- :func:`linear_kfold`: k = 3 seeded linear "cross-trained" models and the folds of B samples (ReCo/MeGe's input).
- :func:`nan_everywhere`, :func:`inf_everywhere`, :func:`nan_when_perturbed`: logit spoilers ``fn(inputs, logits)``
  for the fuzz suites' wrapped models (a metric must raise, never score, on non-finite outputs).
- :func:`metric_call`: a registered metric's own call on one chunk, as ``fl.evaluate`` makes it (the device seam and
  host-sync tests).
Each counts its forward calls in ``calls``.
"""

from __future__ import annotations

import time

import torch
from torch import nn


class _Counted(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return super().__call__(*args, **kwargs)


class Additive(_Counted):
    """logits = [s, s − 1], s = Σ_i w_i·x_i (class 0 always predicted)."""

    def __init__(self, w: torch.Tensor, tokens: bool = False):
        super().__init__()
        self.w, self.tokens = w, tokens
        self.eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = (x != 0).double() if self.tokens else x
        s = (z * self.w).flatten(1).sum(1)
        return torch.stack([s, s - 1], dim=1)


class Gated(_Counted):
    """Predicts ``label`` (of 2 classes) iff fewer than ``m`` of the relevant input elements are removed.

    relevant: bool tensor broadcastable to one input (e.g. ``(1, H, W)``) marking the relevant elements; an element
    counts as removed when its value is 0 (inputs are presence indicators, reference zero)."""

    def __init__(self, relevant: torch.Tensor, m: int, label: int = 0):
        super().__init__()
        self.register_buffer("relevant", relevant.float().unsqueeze(0))
        self.m, self.label = m, label
        self.eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        removed = self.relevant.sum() - (x * self.relevant).flatten(1).sum(1)
        z = (removed < self.m).to(x.dtype)
        logits = [z, 1 - z] if self.label == 0 else [1 - z, z]
        return torch.stack(logits, dim=1)


class LinearProb(_Counted):
    """Two classes with p(class 0 | x) = q(x) = q0 + Σ β_p x_p exactly (logits log q, log(1 − q))."""

    def __init__(self, beta: torch.Tensor, q0: float = 0.0) -> None:
        super().__init__()
        self.register_buffer("beta", beta.flatten())
        self.q0 = q0
        self.eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q = self.q0 + (x.flatten(1) * self.beta).sum(1)
        return torch.stack([q.log(), (1 - q).log()], dim=1)


def small_cnn(in_channels: int = 2, side: int = 8, n_classes: int = 3) -> nn.Module:
    """A seeded nonlinear conv net (conv, ReLU, linear) on ``(B, in_channels, side, side)`` inputs, in eval mode."""
    with torch.random.fork_rng():  # PyTorch's default initialisation, seeded, leaving the global RNG as it was
        torch.manual_seed(0)
        net = nn.Sequential(nn.Conv2d(in_channels, 4, 3, padding=1), nn.ReLU(), nn.Flatten(),
                            nn.Linear(4 * side * side, n_classes))
    return net.eval()


def saliency(model, inputs, target):
    """An explainer callable ``(model, inputs, target) -> maps``: faithlab's saliency (cheap, deterministic)."""
    import faithlab as fl

    return fl.explainers.explain(model, inputs, target, method="saliency")


def evaluate_inputs(b: int = 6):
    """A tiny case for fl.evaluate: a :func:`small_cnn` on 2 × 8 × 8 inputs with 3 classes, ``b`` random inputs,
    labels, and two explainers' maps ("A" with x's channels, "B" with one) → (model, x, y, maps)."""
    model = small_cnn(in_channels=2, side=8, n_classes=3)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(b, 2, 8, 8, generator=g)
    y = torch.randint(0, 3, (b,), generator=g)
    maps = {"A": torch.randn(b, 2, 8, 8, generator=g), "B": torch.randn(b, 1, 8, 8, generator=g).abs()}
    return model, x, y, maps


def linear_kfold(x: torch.Tensor, n_classes: int = 3):
    """k = 3 seeded linear models of x's inputs and folds ``arange(B) % 3``: the ``kfold`` object fl.evaluate reads."""
    from types import SimpleNamespace

    models = []
    for seed in range(3):
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            models.append(nn.Sequential(nn.Flatten(), nn.Linear(x[0].numel(), n_classes)).eval())
    return SimpleNamespace(models=models, folds=torch.arange(x.shape[0]) % 3)


def fewclass_candidates_reference(image, grid):
    """Few-class Fidelity's candidates of one ``(C, H, W)`` numpy image, one at a time in the style of the authors'
    code (scipy ``gaussian_filter`` spatially, ``skimage.exposure.match_histograms`` per channel, min–max range
    scaling over the whole image): the slow reference of ``fewclass.candidates`` → list of ``(C, H, W)`` arrays."""
    from scipy.ndimage import gaussian_filter
    from skimage.exposure import match_histograms

    mu = image.mean()
    out = []
    for op, sigma, adjustment in grid:
        def blur(a):
            return gaussian_filter(a, sigma=(0, sigma, sigma))
        c = {"V1": lambda: blur(image), "V2": lambda: blur(image) * image, "V3": lambda: blur(image) * mu,
             "V4": lambda: blur(image) / mu, "V5": lambda: blur(image) * (1 - mu),
             "V14": lambda: blur(image) * image ** 2, "V8": lambda: blur(image * image),
             "V9": lambda: blur(image * mu), "V10": lambda: blur(image / mu), "V11": lambda: blur(image * (1 - mu)),
             "V15": lambda: blur(image ** 3)}[op]().astype(image.dtype)
        if adjustment == "s":
            lo, hi = c.min(), c.max()
            c = ((c - lo) / (hi - lo) * (image.max() - image.min()) + image.min()).astype(image.dtype)
        elif adjustment == "m":
            c = match_histograms(c, image, channel_axis=0).astype(image.dtype)
        out.append(c)
    return out


def nan_everywhere(inputs: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    return torch.full_like(logits, torch.nan)


def inf_everywhere(inputs: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    return torch.full_like(logits, torch.inf)


def nan_when_perturbed(clean: torch.Tensor):
    """NaN logits for every input that is not one of the clean samples: the clean read-out is finite."""

    def fn(inputs: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        is_clean = (inputs.flatten(1)[:, None, :] == clean.flatten(1)[None]).all(-1).any(1)
        return torch.where(is_clean[:, None], logits, torch.nan)

    return fn


class Sleepy(nn.Module):
    """A tiny CNN (two classes) that sleeps ``delay`` seconds per input and counts its calls and inputs."""

    def __init__(self, delay: float, side: int):
        super().__init__()
        torch.manual_seed(0)
        self.conv, self.fc = nn.Conv2d(3, 4, 3, padding=1), nn.Linear(4, 2)
        self.delay, self.calls, self.inputs = delay, 0, 0
        import faithlab as fl

        self.faithlab_preprocess = fl.models.Preprocess(resize=side, crop=(side, side), mean=(0.0, 0.0, 0.0),
                                                        std=(1.0, 1.0, 1.0))
        self.eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        self.inputs += x.shape[0]
        time.sleep(self.delay * x.shape[0])
        return self.fc(torch.relu(self.conv(x)).mean((2, 3)))


def image_folder(root, side: int):
    """A folder of two classes of two random PNGs each (side × side, RGB) → root."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    for cls in "ab":
        (root / cls).mkdir(parents=True)
        for i in range(2):
            Image.fromarray(rng.integers(0, 256, (side, side, 3), dtype=np.uint8)).save(root / cls / f"{i}.png")
    return root


def metric_call(name: str, model, x: torch.Tensor, y: torch.Tensor, attributions: torch.Tensor, *, batch_size,
                explainer=None, kfold=None, options=None, index: torch.Tensor | None = None):
    """Registered metric ``name`` on one chunk as ``fl.evaluate`` calls it: its own public function with the keyword
    arguments its declaration reads (``Metric.call``), or its ``compute`` when it has no function (ReCo, MeGe), the
    :class:`~faithlab.metrics.registry.Shared` inputs it uses computed first. ``options`` override the evaluate
    options' defaults; ``index``: the samples' global indices (made here when None: pass it when the call must make
    no tensor of its own). The model reads the clean prediction as its target (labels ``y`` where the metric reads
    labels)."""
    from faithlab.metrics import registry
    from faithlab.metrics.registry import METRICS, SHARED, Context

    metric = METRICS[name]
    values = registry.check_options(options or {}, [], x)
    index = torch.arange(x.shape[0]) if index is None else index
    with torch.no_grad():
        target = model(x).argmax(1)

    def context(maps, inputs=None, target_=target):
        return Context(model=model, x=x, labels=y, target=target_, attributions=maps, name="E", explainer=explainer,
                       sample_index=index, options=values, batch_size=batch_size, kfold=kfold, inputs=inputs or {},
                       user_model=model)

    shared = {s: SHARED[s].compute(context(None)) for s in metric.uses.values()}
    if metric.function is None:  # dataset level: the whole data at once, no target (as fl.evaluate calls it)
        return metric.run(context(attributions, shared, None))
    return metric.call(context(attributions, shared))
