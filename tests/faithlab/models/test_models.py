"""Tests of faithlab.models: registry, shapes, gradients, attention recording, text padding, Lipschitz bound. Loading
pretrained weights (from local files only) and the timm ViT conversion are test_pretrained.py's."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

import faithlab as fl

B = 3
IMG = dict(in_channels=3, n_classes=5)
TEXT = dict(vocab_size=30, n_classes=5)


def _image(g):
    return torch.randn(B, 3, 16, 16, generator=g)


def _series(g):
    return torch.randn(B, 7, 3, generator=g)


def _tokens(g):
    return torch.randint(1, 30, (B, 9), generator=g)


CASES = {
    "linear": (dict(IMG, image_size=16), _image),
    "small_cnn": (dict(IMG, width=4), _image),
    "resnet9": (dict(IMG, width=0.0625), _image),
    "resnet18_cifar": (dict(IMG, base_width=4, dropout=0.25), _image),
    "vgg_small": (dict(IMG, width=4), _image),
    "mobilenet_small": (dict(IMG, width=4, expand=2), _image),
    "densenet_small": (dict(IMG, growth_rate=4, block_config=(2, 2), num_init_features=8), _image),
    "xception_small": (dict(IMG, width=4), _image),
    "vit": (dict(IMG, image_size=16, patch_size=4, dim=16, depth=2, heads=2), _image),
    "bilstm": (dict(IMG, hidden=6), _series),
    "cnn1d": (dict(IMG, width=6), _series),
    "lstm_text": (dict(TEXT, embed_dim=8, hidden=8), _tokens),
    "transformer_text": (dict(TEXT, dim=8, heads=2), _tokens),
    "lipschitz_cnn": (dict(IMG, image_size=16, width=0.25), _image),
}


def _build(name: str, **extra) -> tuple[nn.Module, torch.Tensor]:
    config, make_x = CASES[name]
    torch.manual_seed(0)
    return fl.models.build(name, **{**config, **extra}), make_x(torch.Generator().manual_seed(1))


def test_registry_lists_every_model_and_rejects_unknown_names():
    assert fl.models.available() == sorted(CASES)
    with pytest.raises(ValueError, match="name must be one of .*small_cnn"):
        fl.models.build("resnet1000")


@pytest.mark.parametrize("name", sorted(CASES))
def test_forward_shape_and_gradients_reach_every_parameter_and_the_input(name):
    model, x = _build(name)
    logits = model(x)
    assert logits.shape == (B, 5) and bool(torch.isfinite(logits).all())
    inp = model.embed(x).detach().requires_grad_(True) if x.dtype == torch.int64 else x.clone().requires_grad_(True)
    out = model.forward_embeddings(inp, x != 0) if x.dtype == torch.int64 else model(inp)
    (out * torch.arange(1.0, 6.0)).sum().backward()
    assert inp.grad is not None and float(inp.grad.abs().sum()) > 0
    dead = [n for n, p in model.named_parameters() if p.grad is None or float(p.grad.abs().sum()) == 0]
    if x.dtype == torch.int64:  # embeddings are the input here; the table itself gets no gradient
        dead.remove("embedding.weight")
    assert dead == []


@pytest.mark.parametrize("name", ["small_cnn", "resnet9", "resnet18_cifar", "vgg_small", "mobilenet_small", "cnn1d",
                                  "lipschitz_cnn", "densenet_small", "xception_small"])
def test_cam_layer_is_a_feature_map_module_called_once_and_not_registered_twice(name):
    model, x = _build(name)
    outputs = []
    handle = model.cam_layer.register_forward_hook(lambda m, i, o: outputs.append(o))
    model.eval()(x)
    handle.remove()
    assert len(outputs) == 1 and outputs[0].ndim == x.ndim and outputs[0].shape[0] == B
    assert any(m is model.cam_layer for m in model.modules())
    assert not any(k.startswith("cam_layer") for k in model.state_dict())


def test_resnet9_follows_ffidelity_layout_and_width_scales():
    full = fl.models.build("resnet9", n_classes=100)
    convs = [m.out_channels for m in full.modules() if isinstance(m, nn.Conv2d)]
    assert convs == [64, 128, 128, 128, 256, 512, 512, 512]
    assert full.cam_layer is full.res2[-1] and full.head[-1].in_features == 512
    assert isinstance(full.head[0], nn.AdaptiveMaxPool2d) and full.head[2].p == 0.2
    half = fl.models.build("resnet9", width=0.5)
    assert [m.out_channels for m in half.modules() if isinstance(m, nn.Conv2d)] == [c // 2 for c in convs]


def test_resnet18_cifar_stem_blocks_and_widths():
    model = fl.models.build("resnet18_cifar", base_width=26, dropout=0.4)
    assert model.stem[0].kernel_size == (3, 3) and model.stem[0].stride == (1, 1)
    assert not any(isinstance(m, nn.MaxPool2d) for m in model.modules())
    blocks = [m for m in model.modules() if isinstance(m, fl.models.BasicBlock)]
    assert len(blocks) == 8 and [b.conv2.out_channels for b in blocks[1::2]] == [26, 52, 104, 208]
    assert model.cam_layer is model.layer4[-1] and model.head[2].p == 0.4


def test_vgg_small_is_a_plain_stack_of_conv_pairs_with_relu_modules():
    model = fl.models.build("vgg_small", width=6, dropout=0.3)
    assert [m.out_channels for m in model.modules() if isinstance(m, nn.Conv2d)] == [6, 6, 12, 12, 24, 24]
    assert all(m.kernel_size == (3, 3) for m in model.modules() if isinstance(m, nn.Conv2d))
    assert [type(m) for m in model.features] == [nn.Sequential, nn.MaxPool2d] * 3
    relus = [m for m in model.modules() if isinstance(m, nn.ReLU)]
    assert len(relus) == 7 and not any(r.inplace for r in relus) and len({id(r) for r in relus}) == 7
    assert model.cam_layer is model.features[4] and model.classifier[2].p == 0.3
    model.eval()
    x = torch.randn(2, 3, 28, 28, generator=torch.Generator().manual_seed(0))
    h = x
    for module in model.features:  # plain stack: no shortcut anywhere
        h = module(h)
    assert torch.equal(model(x), model.classifier(h.mean((2, 3))))
    with pytest.raises(ValueError, match="width"):
        fl.models.build("vgg_small", width=0)
    with pytest.raises(ValueError, match="dropout"):
        fl.models.build("vgg_small", dropout=1.5)


def test_mobilenet_small_uses_depthwise_inverted_residuals_with_shortcuts_where_shapes_match():
    model = fl.models.build("mobilenet_small", width=8, expand=3).eval()
    blocks = [m for m in model.modules() if isinstance(m, fl.models.InvertedResidual)]
    assert [b.use_residual for b in blocks] == [True, False, True, False, True]
    assert [b.depthwise[0].stride for b in blocks] == [(1, 1), (2, 2), (1, 1), (2, 2), (1, 1)]
    assert isinstance(blocks[0].expand, nn.Identity) and blocks[1].expand[0].out_channels == 8 * 3
    for b in blocks:
        dw = b.depthwise[0]
        assert dw.groups == dw.in_channels == dw.out_channels and dw.kernel_size == (3, 3)
        assert len(b.project) == 2  # linear bottleneck: conv + BN, no activation
    assert [b.project[0].out_channels for b in blocks] == [8, 16, 16, 32, 32]
    assert model.cam_layer is model.features[-1] and model.fc.in_features == 64
    x = torch.randn(2, 8, 14, 14, generator=torch.Generator().manual_seed(0))
    b = blocks[2]
    with torch.no_grad():  # the shortcut is really added
        y = torch.randn(2, 16, 14, 14, generator=torch.Generator().manual_seed(0))
        assert torch.allclose(b(y), y + b.project(b.depthwise(b.expand(y))))
        assert blocks[1](x).shape == (2, 16, 7, 7)
    assert not any(r.inplace for r in model.modules() if isinstance(r, nn.ReLU))
    hard = fl.models.build("mobilenet_small", width=4, activation="hardswish")
    assert any(isinstance(m, nn.Hardswish) for m in hard.modules())
    assert not any(isinstance(m, nn.ReLU) for m in hard.modules())
    with pytest.raises(ValueError, match="activation"):
        fl.models.build("mobilenet_small", activation="gelu")
    with pytest.raises(ValueError, match="expand"):
        fl.models.build("mobilenet_small", expand=0)


@pytest.mark.parametrize("name", ["vgg_small", "mobilenet_small"])
def test_small_vgg_and_mobilenet_shapes_cam_width_and_determinism(name):
    torch.manual_seed(0)
    model = fl.models.build(name).eval()  # the defaults: 3 channels, 10 classes, width 16
    g = torch.Generator().manual_seed(1)
    for size in (28, 16, 8):
        x = torch.randn(4, 3, size, size, generator=g)
        with torch.no_grad():
            out = model(x)
            assert out.shape == (4, 10) and bool(torch.isfinite(out).all())
            assert torch.equal(model(x), out)  # eval mode: dropout off, BN running stats
    feats = []
    handle = model.cam_layer.register_forward_hook(lambda m, i, o: feats.append(o))
    with torch.no_grad():
        model(torch.randn(2, 3, 28, 28, generator=g))
    handle.remove()
    assert len(feats) == 1 and feats[0].ndim == 4 and tuple(feats[0].shape[2:]) == (7, 7)
    assert feats[0].shape[1] == (64 if name == "vgg_small" else 128)
    n_params = [sum(p.numel() for p in fl.models.build(name, width=w).parameters()) for w in (8, 16, 24)]
    assert n_params[0] < n_params[1] < n_params[2]
    x = torch.randn(2, 3, 28, 28, generator=g)
    cam = fl.explainers.explain(model, x, 3, method="gradcam")
    guided = fl.explainers.explain(model, x, 3, method="guided_backprop")
    assert cam.shape[0] == guided.shape[0] == 2 and bool(torch.isfinite(cam).all() & torch.isfinite(guided).all())
    assert float(guided.abs().sum()) > 0


@pytest.mark.parametrize("name", ["vgg_small", "mobilenet_small"])
def test_small_vgg_and_mobilenet_learn_a_separable_batch(name):
    g = torch.Generator().manual_seed(0)
    y = torch.arange(16) % 2
    x = 0.5 * torch.randn(16, 3, 28, 28, generator=g)
    x[:, 0] += (2.0 * y - 1.0).view(-1, 1, 1)  # the class is the sign of channel 0's mean
    torch.manual_seed(0)
    model = fl.models.build(name, n_classes=2, width=8)
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(12):
        loss = nn.functional.cross_entropy(model(x), y)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        losses.append(float(loss.detach()))
    assert max(losses[-3:]) < 0.3 * losses[0]
    for bn in (m for m in model.modules() if isinstance(m, nn.BatchNorm2d)):  # 12 steps leave stale running stats:
        bn.reset_running_stats()  # re-estimate them from the batch, as many epochs would
        bn.momentum = None
    with torch.no_grad():
        model(x)
        model.eval()
        assert bool((model(x).argmax(1) == y).all())


def test_vit_stem_is_optional_and_a_plain_vit_keeps_its_parameters():
    """stem_width=0 is the paper's ViT: no stem parameters, so its state dicts (cached ViTs, vit_from_timm's
    conversions) load as before; a stem puts two 3x3 convolutions before the patch embedding, which then reads
    stem_width channels."""
    plain = fl.models.build("vit", image_size=8, patch_size=4, in_channels=3, n_classes=3, dim=8, depth=1, heads=2)
    assert not any(k.startswith("stem.") for k in plain.state_dict()) and plain.patch_embed.in_channels == 3
    stem = fl.models.build("vit", image_size=8, patch_size=4, in_channels=3, n_classes=3, dim=8, depth=1, heads=2,
                           stem_width=5).eval()
    convs = [m for m in stem.stem.modules() if isinstance(m, nn.Conv2d)]
    assert [(c.in_channels, c.out_channels, c.kernel_size) for c in convs] == [(3, 5, (3, 3)), (5, 5, (3, 3))]
    assert stem.patch_embed.in_channels == 5 and stem(torch.randn(2, 3, 8, 8)).shape == (2, 3)
    with pytest.raises(ValueError, match="stem_width"):
        fl.models.build("vit", image_size=8, patch_size=4, stem_width=-1)


def test_vit_attention_recording_gives_row_stochastic_maps_and_their_exact_gradients():
    model, x = _build("vit")
    model.eval()
    assert model.n_patches == 16 and model.patch_size == 4 and len(model.blocks) == 2
    model(x)
    with pytest.raises(RuntimeError, match="record_attention"):
        model.attentions()
    model.record_attention(True)
    out = model(x)
    maps = model.attentions()
    assert [tuple(a.shape) for a in maps] == [(B, 2, 17, 17)] * 2
    for a in maps:
        assert bool((a >= 0).all()) and torch.allclose(a.sum(-1), torch.ones(B, 2, 17))
    loss = out[:, 1].sum()
    expected = torch.autograd.grad(loss, maps, retain_graph=True)
    loss.backward()
    for got, want in zip(model.attention_grads(), expected):
        assert got.shape == want.shape and torch.equal(got, want) and float(want.abs().sum()) > 0
    copied = copy.deepcopy(model)  # recorded graph tensors are dropped, not deep-copied
    assert copied.blocks[0].attn.attn is None and torch.equal(copied(x), model(x))
    model.record_attention(False)
    model(x)
    assert all(blk.attn.attn is None for blk in model.blocks)


def test_bilstm_last_pool_uses_final_forward_and_backward_states():
    model, x = _build("bilstm")
    model.eval()
    out, _ = model.lstm(x)
    h = model.lstm.hidden_size
    expected = model.fc(torch.cat([out[:, -1, :h], out[:, 0, h:]], dim=-1))
    assert torch.allclose(model(x), expected, atol=1e-6)
    mean_model, _ = _build("bilstm", pool="mean")
    mean_model.eval()
    out, _ = mean_model.lstm(x)
    assert torch.allclose(mean_model(x), mean_model.fc(out.mean(1)), atol=1e-6)
    with pytest.raises(ValueError, match="pool"):
        fl.models.build("bilstm", in_channels=3, n_classes=2, pool="max")


@pytest.mark.parametrize("name", ["lstm_text", "transformer_text"])
def test_text_models_forward_equals_forward_embeddings_and_ignore_trailing_pads(name):
    model, tokens = _build(name)
    model.eval()
    tokens[0, 6:] = 0  # a shorter sentence, padded
    emb = model.embed(tokens)
    assert emb.shape == (B, 9, 8)
    expected = model.forward_embeddings(emb, tokens != 0)
    assert torch.equal(model(tokens), expected)
    assert torch.equal(fl.models.FromEmbeddings(model)(emb, tokens != 0), expected)
    padded = torch.cat([tokens, torch.zeros(B, 5, dtype=torch.int64)], dim=1)
    assert torch.allclose(model(padded), expected, rtol=1e-5, atol=1e-6)
    changed = tokens.clone()
    changed[:, 2] = changed[:, 2] % 29 + 1
    assert not torch.allclose(model(changed), expected)
    if name == "transformer_text":  # pad keys get exactly zero attention
        with torch.no_grad():
            model.record_attention(True)(tokens)
        assert all(float(a[0, :, :, 6:].abs().max()) == 0 and float(a[1:].min()) > 0 for a in model.attentions())


def test_text_model_errors():
    with pytest.raises(TypeError, match="forward_embeddings"):
        fl.models.FromEmbeddings(nn.Linear(2, 2))
    model, _ = _build("transformer_text", max_len=4)
    with pytest.raises(ValueError, match="max_len"):
        model(torch.ones(1, 5, dtype=torch.int64))


def _operator_norm(layer: nn.Module, shape: tuple[int, ...], iters: int = 30) -> float:
    """Largest singular value of the linear part of ``layer`` at input ``shape`` by power iteration."""
    g = torch.Generator().manual_seed(0)
    v = torch.randn(shape, generator=g)
    zero = layer(torch.zeros(shape)).detach()
    for _ in range(iters):
        v = (v / v.norm()).requires_grad_(True)
        u = layer(v) - zero
        (v,) = torch.autograd.grad((u * u.detach()).sum(), v)
    v = v / v.norm()
    with torch.no_grad():
        return float((layer(v) - zero).norm())


@pytest.mark.parametrize("activation", ["prelu", "groupsort"])
def test_lipschitz_cnn_is_one_lipschitz(activation):
    model = fl.models.build("lipschitz_cnn", in_channels=1, n_classes=4, image_size=8, width=0.25,
                            activation=activation).eval()
    shapes = {0: (1, 1, 8, 8), 4: (1, 12, 4, 4), 8: (1, 24, 2, 2)}
    norms = [_operator_norm(model[i], s) for i, s in shapes.items()]
    norms.append(float(torch.linalg.matrix_norm(model[11].weight.detach(), 2)))
    assert max(norms) <= 1 + 1e-3 and norms[0] > 0.9  # tight: orthogonalised kernels
    assert _operator_norm(nn.Conv2d(12, 24, 3, padding=1), (1, 12, 4, 4)) > 1  # the check can fail
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(2, 64, 1, 8, 8, generator=g)
    near = a + 1e-2 * torch.randn(a.shape, generator=g)
    with torch.no_grad():
        for other in (b, near):
            ratio = (model(a) - model(other)).norm(dim=1) / (a - other).flatten(1).norm(dim=1)
            assert float(ratio.max()) <= 1 + 1e-4


def test_lipschitz_cnn_tau_scales_the_logits_only():
    base = fl.models.build("lipschitz_cnn", in_channels=1, n_classes=4, image_size=8, width=0.25).eval()
    hot = fl.models.build("lipschitz_cnn", in_channels=1, n_classes=4, image_size=8, width=0.25, tau=10.0).eval()
    hot.load_state_dict(base.state_dict())
    x = torch.randn(5, 1, 8, 8, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        assert torch.allclose(hot(x), 10.0 * base(x), atol=1e-5)
    with pytest.raises(ValueError, match="tau"):
        fl.models.build("lipschitz_cnn", tau=0)


def test_lipschitz_cnn_argument_errors():
    with pytest.raises(ValueError, match="activation"):
        fl.models.build("lipschitz_cnn", activation="relu")
    with pytest.raises(ValueError, match="image_size"):
        fl.models.build("lipschitz_cnn", image_size=30)


def test_user_registered_model_is_built_by_name_and_names_are_unique():
    @fl.models.register("test_linear_probe")
    class LinearProbe(torch.nn.Module):
        def __init__(self, n_features: int = 4, n_classes: int = 2):
            super().__init__()
            self.fc = torch.nn.Linear(n_features, n_classes)

        def forward(self, x):
            return self.fc(x.flatten(1))

    model = fl.models.build("test_linear_probe", n_features=6, n_classes=3)
    assert isinstance(model, LinearProbe) and model(torch.zeros(2, 6)).shape == (2, 3)
    assert "test_linear_probe" in fl.models.available()
    with pytest.raises(ValueError, match="test_linear_probe"):
        fl.models.register("test_linear_probe")(LinearProbe)
    with pytest.raises(ValueError, match="small_cnn"):
        fl.models.register("small_cnn")(LinearProbe)


@pytest.mark.parametrize("name", ["lstm_text", "transformer_text"])
def test_removed_token_is_a_zero_embedding_kept_in_the_sequence(name):
    """F-Fidelity's text removal (spec §1.1): a removed token is a zero embedding that still counts in the pool;
    the pad id deletes it. Padding positions stay padding under reference='removed_token'."""
    import faithlab as fl

    torch.manual_seed(0)
    kw = {"embed_dim": 8, "hidden": 8} if name == "lstm_text" else {"dim": 8, "depth": 1, "heads": 2, "max_len": 6}
    model = fl.models.build(name, vocab_size=20, n_classes=2, **kw).eval()
    x = torch.tensor([[5, 6, 7, 9, 0, 0], [8, 9, 3, 4, 2, 0]])
    removed = torch.tensor([[True, False, False, False, True, True], [False, True, False, False, False, True]])
    units = fl.perturb.token_units(x)
    zeroed = fl.perturb.apply_removal(x, removed, units, reference="removed_token")
    assert zeroed.tolist() == [[1, 6, 7, 9, 0, 0], [8, 1, 3, 4, 2, 0]]
    emb = model.embed(x).clone()
    emb[removed & (x != 0)] = 0.0
    with torch.no_grad():
        expected = model.forward_embeddings(emb, x != 0)
        assert torch.allclose(model(zeroed), expected, atol=1e-6)
        deleted = fl.perturb.apply_removal(x, removed, units, reference="zero")
        assert not torch.allclose(model(deleted), expected, atol=1e-4)  # deletion drops the token from the pool
    with pytest.raises(TypeError, match="removed_token"):
        fl.perturb.make_reference(torch.zeros(2, 3, 4), "removed_token")


def test_cnn1d_positional_channel_is_made_inside_the_model():
    import faithlab as fl

    torch.manual_seed(0)
    model = fl.models.build("cnn1d", in_channels=2, n_classes=3, width=4, layers=2, kernel_size=3, positional=True,
                            dilation_growth=2).eval()
    x = torch.randn(5, 11, 2)
    t = torch.linspace(0, 1, 11).expand(5, 1, 11)
    manual = model.fc(model.features(torch.cat([x.transpose(1, 2), t], 1)).mean(-1))
    assert torch.allclose(model(x), manual, atol=1e-6)
    assert model.features[1][0].dilation == (2,) and model.features[0][0].in_channels == 3
    # the position breaks time-reversal symmetry: a reversed series is not classified as its mirror image
    plain = fl.models.build("cnn1d", in_channels=2, n_classes=3, width=4, layers=1, kernel_size=1).eval()
    assert torch.allclose(plain(x), plain(x.flip(1)), atol=1e-6)
    assert not torch.allclose(model(x), model(x.flip(1)), atol=1e-4)


def test_densenet_small_is_torchvisions_densenet_with_a_small_image_stem():
    from torchvision.models import DenseNet

    model = fl.models.build("densenet_small", in_channels=1, n_classes=3, growth_rate=6, block_config=(2, 3))
    assert isinstance(model.net, DenseNet) and model.cam_layer is model.net.features.norm5
    assert model.net.features.conv0.kernel_size == (3, 3) and isinstance(model.net.features.pool0, nn.Identity)
    blocks = [m for n, m in model.net.features.named_children() if n.startswith("denseblock")]
    assert [len(b) for b in blocks] == [2, 3]
    x = torch.rand(3, 1, 12, 12)
    with torch.no_grad():  # our forward is torchvision's, with the last ReLU out of place (Excitation Backprop)
        assert torch.equal(model.eval()(x), DenseNet.forward(model.net, x))
    narrow = fl.models.build("densenet_small", width=5)  # the `width` of the other small models (TRACE's settings)
    assert narrow.net.features.conv0.out_channels == 10
    assert {m.conv2.out_channels for m in narrow.net.modules() if type(m).__name__ == "_DenseLayer"} == {5}
    with pytest.raises(ValueError, match="width"):
        fl.models.build("densenet_small", width=0)


def test_excitation_backprop_reads_densenet_small():
    """TorchRay's Excitation Backprop takes the cam layer's output as a leaf: torchvision's in-place last ReLU
    broke it; the map is a non-negative image-sized map of each target."""
    model = fl.models.build("densenet_small", n_classes=4, width=4).eval()
    x = torch.rand(2, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    maps = fl.explainers.explain(model, x, torch.tensor([1, 3]), method="excitation_backprop")
    assert maps.shape == (2, 1, 16, 16) and torch.isfinite(maps).all() and (maps >= 0).all() and maps.sum() > 0


def test_xception_small_uses_separable_convolutions_with_strided_shortcuts():
    model = fl.models.build("xception_small", width=4, n_classes=1).eval()
    depthwise = [m for m in model.modules() if isinstance(m, nn.Conv2d) and m.groups > 1]
    assert len(depthwise) == 7 and all(m.groups == m.in_channels == m.out_channels for m in depthwise)
    assert [b.shortcut[0].stride for b in model.blocks] == [(2, 2), (2, 2), (1, 1)]
    assert model(torch.rand(2, 1, 28, 28)).shape == (2, 1)


POOLS = [dict(kernel_size=2), dict(kernel_size=2, ceil_mode=True), dict(kernel_size=3, stride=2, padding=1)]


@pytest.mark.parametrize("options", POOLS)
@pytest.mark.parametrize("shape", [(5, 8, 9, 7), (4, 16, 16, 16), (3, 1, 6, 6)])
def test_max_pool_gives_nn_max_pool_s_values_bit_for_bit_in_the_callers_layout(options, shape):
    from faithlab.models.cnn import max_pool

    g = torch.Generator().manual_seed(0)
    x = torch.relu(torch.randn(*shape, generator=g))
    x[0, 0, :2, :2] = 0.5                                        # a tied window
    x[-1, -1, -1, -1] = float("nan")                              # NaN propagates as in the plain module
    x[1, 0, 0, :] = float("-inf")
    fast, plain = max_pool(**options), nn.MaxPool2d(**options)
    assert type(fast) is nn.MaxPool2d                            # captum's DeepLift / LRP find their rule by type
    with torch.no_grad():                                        # the fast path is taken (C = 1 needs none)
        handed = fast._forward_pre_hooks[next(iter(fast._forward_pre_hooks))](fast, (x,))
    assert (handed is None) == (shape[1] == 1)
    if handed is not None:
        assert handed[0].is_contiguous(memory_format=torch.channels_last) and not handed[0].is_contiguous()
    for mode in (torch.no_grad, torch.inference_mode):
        with mode():
            got, want = fast(x), plain(x)
        assert got.is_contiguous() and torch.equal(got.isnan(), want.isnan())
        assert torch.equal(got.nan_to_num(), want.nan_to_num())
    cl = x.contiguous(memory_format=torch.channels_last)
    with torch.no_grad():                                        # a channels-last input keeps its layout
        assert fast(cl).is_contiguous(memory_format=torch.channels_last)
    xg, xp = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    fast(xg).nan_to_num().pow(2).sum().backward()                 # with autograd: the plain module, same gradients
    plain(xp).nan_to_num().pow(2).sum().backward()
    assert torch.equal(xg.grad, xp.grad)


@pytest.mark.parametrize("name", ["small_cnn", "resnet9", "vgg_small", "xception_small"])
def test_cnn_logits_do_not_depend_on_autograd(name):
    model = fl.models.build(name, **IMG).eval()
    assert any(m._forward_pre_hooks for m in model.modules() if isinstance(m, nn.MaxPool2d))
    x = torch.randn(6, 3, 20, 20, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        fast = model(x)                                          # channels-last pooling
    plain = model(x.clone().requires_grad_(True)).detach()       # autograd: the plain pooling
    assert torch.equal(fast, plain)
