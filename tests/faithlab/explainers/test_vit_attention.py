"""Hand-computed and wiring tests for the attention-based ViT explainers (faithlab.explainers.vit_raw_attention,
vit_rollout, vit_attention_gradcam, vit_transformer_mm, vit_conservative_lrp and their shared vit)."""

from __future__ import annotations

import pytest
import torch

import faithlab as fl
from faithlab import explainers as ve


def _t(rows) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.float64)


def test_raw_attention_is_last_block_cls_row_head_mean():
    first = torch.rand(1, 2, 3, 3, dtype=torch.float64)
    last = torch.stack([_t([[0.1, 0.3, 0.6], [1, 0, 0], [0, 1, 0]]), _t([[0.5, 0.1, 0.4], [1, 0, 0], [0, 0, 1]])])
    assert ve.raw_attention([first, last[None]])[0].tolist() == pytest.approx([0.2, 0.5])


def test_rollout_hand_computed_two_layers():
    # head means A1 = [[.2,.8],[.6,.4]], A2 = [[.5,.5],[.1,.9]]; Â = ½A + ½I; R = Â2·Â1 → CLS row [.525, .475]
    a1 = torch.stack([_t([[0.0, 1.0], [0.6, 0.4]]), _t([[0.4, 0.6], [0.6, 0.4]])])[None]
    a2 = _t([[0.5, 0.5], [0.1, 0.9]])[None, None]
    assert ve.rollout([a1, a2])[0].tolist() == pytest.approx([0.475])
    assert ve.rollout([a2, a1])[0].tolist() == pytest.approx([0.53])  # order matters: Â1·Â2 → [.47, .53]
    assert ve.rollout([a2])[0].tolist() == pytest.approx([0.25])  # one layer: ½·A[0, 1:]


def test_transformer_mm_hand_computed():
    a1, g1 = _t([[0.2, 0.8], [0.6, 0.4]])[None, None], _t([[1.0, 2.0], [2.0, 0.5]])[None, None]
    a2, g2 = _t([[0.5, 0.5], [0.0, 1.0]])[None, None], torch.ones(1, 1, 2, 2, dtype=torch.float64)
    # R1 = I + [[.2,1.6],[1.2,.2]]; R2 = R1 + [[.5,.5],[0,1]]·R1 = [[2.4, 3.0], [2.4, 2.4]]
    assert ve.transformer_mm([a1, a2], [g1, g2])[0].tolist() == pytest.approx([3.0])
    assert ve.transformer_mm([a1, a2], [g1, g2], layers="last")[0].tolist() == pytest.approx([0.5])
    # positive part is taken per head before the head mean: heads (+1, −1) give ½·relu, not 0
    a = torch.cat([a1, a1], dim=1)
    g = torch.cat([g1, -g1], dim=1)
    assert ve.transformer_mm([a], [g])[0].tolist() == pytest.approx([0.8])
    with pytest.raises(ValueError, match="layers"):
        ve.transformer_mm([a1], [g1], layers="first")


def test_attention_gradcam_hand_computed():
    attn = torch.stack([_t([[0.2, 0.3, 0.5]] * 3), _t([[0.2, 0.6, 0.2]] * 3)])[None]
    grad = torch.stack([_t([[9.0, 1.0, 3.0]] * 3), _t([[9.0, -1.0, -3.0]] * 3)])[None]
    # head weights = mean gradient over patch tokens: 2, −2 → mean_h(w·A) = (−0.3, 0.3) → ReLU → (0, 0.3)
    assert ve.attention_gradcam(attn, grad)[0].tolist() == pytest.approx([0.0, 0.3])


def test_to_pixels_nearest_and_bilinear():
    tokens = _t([[1.0, 2.0, 3.0, 4.0]])
    near = ve.to_pixels(tokens, 2, (4, 4), upsample="nearest")
    assert near[0, 0].tolist() == [[1, 1, 2, 2], [1, 1, 2, 2], [3, 3, 4, 4], [3, 3, 4, 4]]
    bil = ve.to_pixels(tokens, 2, (4, 4))
    assert bil[0, 0, 0, 0].item() == 1.0 and 1.0 < bil[0, 0, 1, 1].item() < 4.0
    with pytest.raises(ValueError, match="upsample"):
        ve.to_pixels(tokens, 2, (4, 4), upsample="cubic")


@pytest.fixture(scope="module")
def vit():
    torch.manual_seed(0)
    model = fl.models.build("vit", image_size=8, patch_size=4, in_channels=3, n_classes=3, dim=16, depth=2,
                            heads=2).eval()
    x = torch.randn(5, 3, 8, 8, generator=torch.Generator().manual_seed(1))
    return model, x


@pytest.mark.parametrize("method", ve.ATTENTION_METHODS)
def test_registered_methods_shape_sign_batch_invariance(vit, method):
    model, x = vit
    target = torch.tensor([0, 1, 2, 0, 1])
    full = fl.explainers.explain(model, x, target, method=method, batch_size=5)
    assert full.shape == (5, 1, 8, 8) and bool((full >= 0).all())
    assert torch.allclose(fl.explainers.explain(model, x, target, method=method, batch_size=2), full, atol=1e-6)
    assert not model.blocks[0].attn.record and model.blocks[0].attn.attn is None  # recording state restored


def test_explain_wires_recorded_attention(vit):
    model, x = vit
    target = torch.zeros(5, dtype=torch.int64)
    with torch.no_grad():
        model.record_attention(True)
        model(x)
        maps = model.attentions()
        model.record_attention(False)
    expected = ve.to_pixels(ve.rollout(maps), model.grid, (8, 8), upsample="nearest")
    got = fl.explainers.explain(model, x, target, method="rollout", upsample="nearest")
    assert torch.allclose(got, expected, atol=1e-6)


def test_gradient_methods_depend_on_target(vit):
    model, x = vit
    a = fl.explainers.explain(model, x, torch.zeros(5, dtype=torch.int64), method="transformer_mm")
    b = fl.explainers.explain(model, x, torch.ones(5, dtype=torch.int64), method="transformer_mm")
    assert not torch.allclose(a, b)
    r0 = fl.explainers.explain(model, x, torch.zeros(5, dtype=torch.int64), method="raw_attention")
    r1 = fl.explainers.explain(model, x, torch.ones(5, dtype=torch.int64), method="raw_attention")
    assert torch.equal(r0, r1)


def test_non_vit_model_raises():
    cnn = fl.models.build("small_cnn", in_channels=3, n_classes=3).eval()
    with pytest.raises(TypeError, match="model must record attention"):
        fl.explainers.explain(cnn, torch.randn(2, 3, 8, 8), 0, method="rollout")


def _linearised_vit():
    """Tiny ViT without bias terms (biases, LayerNorm shift, CLS token, positional embedding) and with GELU
    replaced by the identity: with attention and LayerNorm scale fixed it is linear in x, so gradient × input
    through the conservative forward must sum exactly to the target logit."""
    torch.manual_seed(3)
    model = fl.models.build("vit", image_size=8, patch_size=4, in_channels=3, n_classes=3, dim=16, depth=2,
                            heads=2).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or name in ("cls_token", "pos_embed"):
                p.zero_()
    for blk in model.blocks:
        blk.mlp.act = torch.nn.Identity()
    return model.eval()


def test_conservative_forward_matches_model(vit):
    model, x = vit
    with torch.no_grad():
        assert torch.allclose(ve.conservative_forward(model, x), model(x), atol=1e-5)


def test_conservative_forward_goes_through_a_convolutional_stem():
    """A ViT with a stem (F-Fidelity's canvas stand-in) embeds through it: the same logits as the model (the patch
    embedding applied to the raw pixels, bypassing the stem, would not even take their channels)."""
    torch.manual_seed(0)
    model = fl.models.build("vit", image_size=8, patch_size=4, in_channels=3, n_classes=3, dim=16, depth=2, heads=2,
                            stem_width=6).eval()
    x = torch.randn(5, 3, 8, 8, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        assert torch.allclose(ve.conservative_forward(model, x), model(x), atol=1e-5)


def test_conservative_lrp_conserves_logit_and_plain_gradient_input_does_not():
    model = _linearised_vit()
    x = torch.randn(4, 3, 8, 8, generator=torch.Generator().manual_seed(2))
    target = torch.tensor([0, 1, 2, 1])
    logit = model(x).gather(1, target[:, None])[:, 0].detach()
    relevance = fl.explainers.explain(model, x, target, method="conservative_lrp")
    assert relevance.shape == x.shape
    assert torch.allclose(relevance.sum((1, 2, 3)), logit, atol=1e-4, rtol=1e-4)
    plain = fl.explainers.explain(model, x, target, method="input_x_gradient")
    assert not torch.allclose(plain.sum((1, 2, 3)), logit, atol=1e-2, rtol=1e-2)  # softmax/LN break conservation


def test_conservative_lrp_batch_invariance_and_target(vit):
    model, x = vit
    target = torch.tensor([0, 1, 2, 0, 1])
    full = fl.explainers.explain(model, x, target, method="conservative_lrp", batch_size=5)
    assert torch.allclose(fl.explainers.explain(model, x, target, method="conservative_lrp", batch_size=2), full,
                          atol=1e-6)
    other = fl.explainers.explain(model, x, torch.zeros(5, dtype=torch.int64), method="conservative_lrp")
    assert not torch.allclose(full, other)


def test_conservative_lrp_non_vit_raises():
    cnn = fl.models.build("small_cnn", in_channels=3, n_classes=3).eval()
    with pytest.raises(TypeError, match="ViT-like"):
        fl.explainers.explain(cnn, torch.randn(2, 3, 8, 8), 0, method="conservative_lrp")
