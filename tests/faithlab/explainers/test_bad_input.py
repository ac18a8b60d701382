"""``faithlab.explainers.explain`` refusing bad input by name (issue #11): every argument's error names it (model,
method, target, generator, options, x, layer, ...); targets checked against the model's width without a forward pass;
x's rank, dtype and device against the model; logits that are not 2-d floating, or NaN on x or only on the points a
method builds; non-finite maps, references and seeds; token inputs and the ViT relevance pass checked too."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import faithlab as fl
from explainer_nets import BagOfEmbeddings, assert_near, linear_net, random_images, weight_map
from faithlab import explainers as ex


# ----------------------------------------------------------------------------------------------------- errors
def test_errors_name_arguments():
    model, x = linear_net(), random_images()
    with pytest.raises(ValueError, match="model"):
        ex.explain(model.train(), x, 0, method="saliency")
    model.eval()
    with pytest.raises(ValueError, match="method.*saliency"):
        ex.explain(model, x, 0, method="gradcamm")
    with pytest.raises(ValueError, match="target"):
        ex.explain(model, x, torch.zeros(3, dtype=torch.int64), method="saliency")
    with pytest.raises(TypeError, match="target"):
        ex.explain(model, x, torch.zeros(5), method="saliency")
    with pytest.raises(ValueError, match="generator"):
        ex.explain(model, x, 0, method="random")
    with pytest.raises(TypeError, match="n_step"):
        ex.explain(model, x, 0, method="integrated_gradients", n_step=3)
    with pytest.raises(ValueError, match="baseline"):
        ex.explain(model, x, 0, method="integrated_gradients", baseline="mean")
    with pytest.raises(ValueError, match="batch_size"):
        ex.explain(model, x, 0, method="saliency", batch_size=0)
    with pytest.raises(ValueError, match="layer"):
        ex.explain(model, x, 0, method="gradcam")
    with pytest.raises(ValueError, match="layer"):
        ex.explain(model, x, 0, method="gradcam", layer="nope")
    with pytest.raises(ValueError, match="background"):
        ex.explain(model, x, 0, method="expected_gradients", generator=0, background=torch.zeros(2, 3))
    with pytest.raises(ValueError, match="base"):
        ex.explain(model, x, 0, method="smoothgrad", generator=0, base="smoothgrad_sq")
    with pytest.raises(ValueError, match="x"):
        ex.explain(model, x.clone().fill_(float("nan")), 0, method="saliency")
    with pytest.raises(TypeError, match="forward_embeddings"):
        ex.explain(model, torch.zeros(2, 3, dtype=torch.int64), 0, method="saliency")
    with pytest.raises(ValueError, match="xi"):
        ex.degrade(x, 1.5, 0)
    with pytest.raises(ValueError, match="generator"):
        ex.degrade(x, 0.5, None)

# ------------------------------------------------------------------------------- bad input (issue #11, explain)
def _tiny() -> tuple[nn.Module, torch.Tensor]:
    """A Linear on 1×4×4 images with 3 classes, and 4 images."""
    return linear_net(1, 4, 4, 3), random_images(4, 1, 4, 4)


class _Logits(nn.Module):
    """A tiny Linear whose logits z on inputs x become fn(x, z)."""

    def __init__(self, fn) -> None:
        super().__init__()
        self.inner, self.fn = linear_net(1, 4, 4, 3), fn

    def forward(self, x):
        return self.fn(x, self.inner(x))


@pytest.mark.parametrize("method", ["saliency", "integrated_gradients", "occlusion", "smoothgrad"])
def test_target_is_checked_against_the_model_width(method):
    model, x = _tiny()
    opts = {"generator": 0} if method == "smoothgrad" else {}
    with pytest.raises(ValueError, match=r"target must hold classes in \[0, 2\].* got \[7\] for sample\(s\) \[2\]"):
        ex.explain(model, x, torch.tensor([0, 1, 7, 2]), method=method, **opts)
    with pytest.raises(ValueError, match=r"target must hold classes in \[0, 2\]"):
        ex.explain(model, x, 3, method=method, **opts)
    with pytest.raises(ValueError, match=r"target must hold class indices >= 0, got \[-1\] for sample\(s\) \[1\]"):
        ex.explain(model, x, torch.tensor([0, -1, 2, 2]), method=method, **opts)
    with pytest.raises(ValueError, match="target"):
        ex.explain(model, x, -1, method=method, **opts)
    assert ex.explain(model, x, 2, method=method, **opts).shape[0] == 4  # the last class is fine


def test_target_type_and_length():
    model, x = _tiny()
    for bad in (1.0, torch.zeros(4), torch.ones(4, dtype=torch.bool), "0", None):
        with pytest.raises(TypeError, match="target"):
            ex.explain(model, x, bad, method="saliency")
    for bad in (torch.zeros(3, dtype=torch.int64), torch.zeros(4, 1, dtype=torch.int64), 2**70):
        with pytest.raises(ValueError, match="target"):
            ex.explain(model, x, bad, method="saliency")
    import numpy as np  # an integer scalar of another library is an int
    assert_near(ex.explain(model, x, np.int64(1), method="saliency"), ex.explain(model, x, 1, method="saliency"))


def test_logit_checks_cost_no_forward_pass():
    """The target and logit checks read the method's own forward passes: saliency still makes one pass per input;
    random, which never calls the model, makes none."""
    model, x = _tiny()
    rows: list[int] = []
    handle = model.register_forward_hook(lambda _m, args, _out: rows.append(len(args[0])))
    try:
        ex.explain(model, x, 1, method="saliency", batch_size=3)
        assert rows == [3, 1]
        rows.clear()
        ex.explain(model, x, 1, method="random", generator=0)
        assert rows == []
    finally:
        handle.remove()
    assert not model._forward_hooks  # explain's own hook is gone


def test_x_rank_dtype_and_device_must_fit_the_model():
    model, x = _tiny()
    for bad in (torch.tensor(1.0), torch.randn(4)):
        with pytest.raises(ValueError, match=r"\bx must be a batch"):
            ex.explain(model, bad, 0, method="saliency")
    for bad in (x.double(), x.half()):
        with pytest.raises(TypeError, match=r"\bx has dtype .* model's parameters are torch.float32"):
            ex.explain(model, bad, 0, method="saliency")
    with pytest.raises(TypeError, match=r"dtype mismatch: x has dtype torch.int64 but model's parameters are "
                                        r"torch.float32.*forward_embeddings"):
        ex.explain(model, (x * 10).long(), 0, method="integrated_gradients")
    for bad in (x.to(torch.complex64), x > 0):
        with pytest.raises(TypeError, match=r"\bx must be a floating-point tensor"):
            ex.explain(model, bad, 0, method="saliency")
    with pytest.raises(ValueError, match="model is on meta but x is on cpu"):
        ex.explain(linear_net(1, 4, 4, 3).to("meta"), x, 0, method="saliency")
    w = weight_map(model, torch.zeros(4, dtype=torch.int64), x).double()
    assert_near(ex.explain(model.double(), x.double(), 0, method="gradient"), w)  # matching dtypes are fine


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_model_output_must_be_2d_floating_logits():
    _, x = _tiny()
    shape = r"model must return logits of shape \(N, n_classes\), got shape \(\d+,\)"
    for fn, error, message in ((lambda i, z: z[:, 0], ValueError, shape),
                               (lambda i, z: (z, z), TypeError, "model must return a tensor of logits"),
                               (lambda i, z: (z * 100).long(), TypeError, "model must return floating-point logits"),
                               (lambda i, z: z[:1], ValueError, r"got shape \(1, 3\) for \d+ inputs")):
        for method in ("saliency", "integrated_gradients", "guided_backprop", "occlusion"):
            with pytest.raises(error, match=message):
                ex.explain(_Logits(fn).eval(), x, 0, method=method)
    with pytest.raises(TypeError, match="model must return a tensor of logits"):  # a plain callable too
        ex.explain(lambda inputs: (inputs.flatten(1),), x, 0, method="saliency")


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("method", ["saliency", "input_x_gradient", "guided_backprop", "integrated_gradients",
                                    "smoothgrad", "expected_gradients", "occlusion"])
def test_nan_logits_on_x_raise_naming_the_samples(method):
    _, x = _tiny()
    x[2, 0, 0, 0] = 50.0  # NaN logits wherever the first pixel exceeds 10: on sample 2, and near it
    model = _Logits(lambda i, z: torch.where(i.flatten(1)[:, :1] > 10, torch.nan, z)).eval()
    opts = {"smoothgrad": {"generator": 0, "stdevs": 0.5}, "random": {"generator": 0},
            "expected_gradients": {"generator": 0, "background": torch.zeros(1, 1, 4, 4), "n_samples": 8},
            }.get(method, {})
    if method == "random":  # never uses the model: the logits of sample 0 are checked (for the target range)
        assert torch.isfinite(ex.explain(model, x, 0, method=method, **opts)).all()
        x = x[[2, 0, 1, 3]]
    with pytest.raises(ValueError, match=r"model returned NaN or inf logits on x for sample\(s\) \[[02]\]") as err:
        ex.explain(model, x, 0, method=method, batch_size=2, **opts)  # sample 2 is the first of the second chunk
    assert method in str(err.value)
    inf = _Logits(lambda i, z: z - torch.inf).eval()
    every = r"\[0\]" if method == "random" else r"\[0, 1, 2, 3\]"
    with pytest.raises(ValueError, match=r"NaN or inf logits on x for sample\(s\) " + every):
        ex.explain(inf, x, 0, method=method, **opts)


def test_nan_logits_only_on_points_the_method_builds():
    model, x = _tiny()
    # NaN where all pixels are below -5: on IG's points next to a baseline of -10, never on x itself
    nan_low = _Logits(lambda i, z: torch.where((i.flatten(1) < -5).all(1, keepdim=True), torch.nan, z)).eval()
    with pytest.raises(ValueError, match=r"inputs that method 'integrated_gradients' built from sample\(s\) \[0, 1\]"):
        ex.explain(nan_low, x[:2], 0, method="integrated_gradients", baseline=-10.0, integration="riemann_left")
    assert torch.isfinite(ex.explain(nan_low, x[:2], 0, method="integrated_gradients", baseline=-1.0)).all()


def test_a_non_finite_map_raises_naming_the_method_and_the_samples():
    """Finite logits, infinite gradient: d sqrt|u| / du at u = 0 is inf·0 = NaN."""

    class Sqrt(nn.Module):
        def forward(self, x):
            return x.flatten(1).abs().sqrt()[:, :3]

    _, x = _tiny()
    x[1, 0, 0, 1] = 0.0
    with pytest.raises(ValueError, match=r"method 'gradient' produced a non-finite \(NaN or inf\) map for "
                                         r"sample\(s\) \[1\]"):
        ex.explain(Sqrt().eval(), x, 1, method="gradient", batch_size=1)
    assert torch.isfinite(ex.explain(Sqrt().eval(), x[[0, 2, 3]], 1, method="gradient")).all()  # no zero there


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_option_values_captum_would_assert_on_are_refused_up_front():
    model, x = _tiny()
    cases = [
        ("integrated_gradients", {"integration": "simpson"}, ValueError, "integration must be one of"),
        ("integrated_gradients", {"integration": "riemann_right", "n_steps": 1}, ValueError, "n_steps must be >= 2"),
        ("sg_sq_ig", {"integration": "simpson", "generator": 0}, ValueError, "integration"),
        ("occlusion", {"window": 5}, ValueError, r"window 5 is larger than the input \(4, 4\)"),
        ("occlusion", {"window": 2, "stride": 3}, ValueError, "stride 3 is larger than window 2"),
        ("occlusion", {"baseline": "black"}, TypeError, "baseline must be a real number"),
        ("occlusion", {"baseline": float("nan")}, ValueError, "baseline must be a number, got NaN"),
        ("smoothgrad", {"nt_samples": 0, "generator": 0}, ValueError, "nt_samples"),
        ("smoothgrad", {"nt_samples": -2, "generator": 0}, ValueError, "nt_samples"),
        ("smoothgrad", {"stdevs": "1", "generator": 0}, TypeError, "stdevs must be a real number"),
        ("smoothgrad", {"stdevs": None, "generator": 0}, TypeError, "stdevs"),
        ("smoothgrad", {"stdevs": -0.1, "generator": 0}, ValueError, "stdevs must be >= 0"),
        ("smoothgrad", {"stdevs": float("nan"), "generator": 0}, ValueError, "stdevs must be a number, got NaN"),
        ("smoothgrad_sq", {"stdevs": float("inf"), "generator": 0}, ValueError, "stdevs"),
        ("smoothgrad", {"n_step": 3, "generator": 0}, TypeError, r"unknown option\(s\) \['n_step'\] for SmoothGrad"),
        ("smoothgrad", {"baseline": 0.0, "generator": 0}, TypeError, r"\['baseline'\].*base 'saliency'"),
    ]
    for method, opts, error, message in cases:
        with pytest.raises(error, match=message):
            ex.explain(model, x, 0, method=method, **opts)
    # the limits themselves are fine: a window of the image's size, stride above it, n_steps = 1 for Gauss-Legendre
    assert torch.isfinite(ex.explain(model, x, 0, method="occlusion", window=4, stride=9)).all()
    assert torch.isfinite(ex.explain(model, x, 0, method="integrated_gradients", n_steps=1)).all()
    assert_near(ex.explain(model, x, 0, method="smoothgrad", generator=0, stdevs=torch.tensor(0.0)),
                ex.explain(model, x, 0, method="saliency"))


def test_non_finite_references_are_refused():
    model, x = _tiny()
    nan_row = torch.zeros_like(x)
    nan_row[3, 0, 1, 1] = torch.nan
    for baseline in (float("nan"), float("inf"), torch.full((1, 1, 4, 4), torch.inf), nan_row):
        for method, opts in (("integrated_gradients", {}), ("sg_sq_ig", {"generator": 0, "n_steps": 2})):
            with pytest.raises(ValueError, match=r"\bbaseline\b.*(NaN or inf|finite|NaN)"):
                ex.explain(model, x, 0, method=method, baseline=baseline, batch_size=2, **opts)
    one_inf = torch.zeros(2, 1, 4, 4).index_fill_(0, torch.tensor([1]), torch.inf)
    for background in (torch.full((2, 1, 4, 4), torch.nan), one_inf):
        with pytest.raises(ValueError, match=r"background contains NaN or inf"):
            ex.explain(model, x, 0, method="expected_gradients", generator=0, background=background)


def test_generator_seeds_torch_refuses_are_a_value_error():
    model, x = _tiny()
    for seed in (2**70, 2**64, -(2**63) - 1):
        for method in ("random", "smoothgrad", "saliency"):  # a non-random method checks a generator it is given
            with pytest.raises(ValueError, match=r"generator seed must lie in \[-2\*\*63, 2\*\*64 - 1\]"):
                ex.explain(model, x, 0, method=method, generator=seed)
    with pytest.raises(TypeError, match="generator"):
        ex.explain(model, x, 0, method="random", generator="seed")
    for seed in (-1, 2**64 - 1, -(2**63)):  # the ends of the range torch accepts
        assert ex.explain(model, x, 0, method="random", generator=seed).shape == (4, 1, 4, 4)
    assert torch.equal(ex.explain(model, x, 0, method="random", generator=-1),
                       ex.explain(model, x, 0, method="random", generator=torch.Generator().manual_seed(-1)))


def test_token_inputs_are_checked_too():
    model = BagOfEmbeddings().eval()
    tokens = torch.tensor([[1, 2, 3, 0], [4, 4, 5, 6]])
    with pytest.raises(ValueError, match=r"target must hold classes in \[0, 1\].* sample\(s\) \[1\]"):
        ex.explain(model, tokens, torch.tensor([0, 2]), method="integrated_gradients")
    with torch.no_grad():
        model.fc.weight[1, 0] = torch.nan
    with pytest.raises(ValueError, match=r"NaN or inf logits on x for sample\(s\) \[0, 1\]"):
        ex.explain(model, tokens, 0, method="gradient")


def test_vit_relevance_checks_its_rebuilt_logits():
    torch.manual_seed(0)
    vit = fl.models.build("vit", image_size=4, patch_size=2, in_channels=1, n_classes=3, dim=8, depth=1, heads=2).eval()
    x = random_images(2, 1, 4, 4)
    for method in ("lrp", "conservative_lrp", "rollout"):
        with pytest.raises(ValueError, match=r"target must hold classes in \[0, 2\]"):
            ex.explain(vit, x, torch.tensor([0, 3]), method=method)
    with pytest.raises(ValueError, match=r"target must hold classes in \[0, 2\]"):  # called directly, outside explain
        ex.relevance(vit, x, torch.tensor([0, 5]))
    with torch.no_grad():
        vit.head.bias[0] = torch.inf
    for method in ("lrp", "attcat", "conservative_lrp", "raw_attention"):
        with pytest.raises(ValueError, match=r"NaN or inf logits on x for sample\(s\) \[0, 1\]"):
            ex.explain(vit, x, 1, method=method)
    with pytest.raises(ValueError, match=r"NaN or inf logits for sample\(s\) \[0, 1\]"):
        ex.relevance(vit, x, torch.tensor([0, 1]))
