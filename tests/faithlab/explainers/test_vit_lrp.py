"""Oracle, conservation and wiring tests for Chefer et al.'s relevance pass, faithlab.explainers.vit_lrp, and the
methods read from it (LRP, Partial LRP, Transformer Attribution, ATTCAT)."""

from __future__ import annotations

import pytest
import torch

import faithlab as fl
from faithlab import explainers as ve
from faithlab.explainers import vit_lrp as vl
from faithlab.explainers import vit_transformer_attribution


def _t(rows) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.float64)


def _vit(seed: int = 0, depth: int = 2) -> torch.nn.Module:
    torch.manual_seed(seed)
    model = fl.models.build("vit", image_size=8, patch_size=4, in_channels=3, n_classes=3, dim=16, depth=depth,
                            heads=2).double().eval()
    with torch.no_grad():  # non-trivial CLS token and biases (the defaults are zero)
        model.cls_token.normal_()
        for name, p in model.named_parameters():
            if name.endswith("bias"):
                p.normal_(std=0.1)
    return model


@pytest.fixture(scope="module")
def vit():
    x = torch.randn(5, 3, 8, 8, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    return _vit(), x, torch.tensor([0, 1, 2, 0, 1])


def test_linear_alpha_beta_hand_computed():
    x = _t([1.0, -2.0])
    w = _t([[2.0, 1.0], [-1.0, -1.0], [3.0, -1.0], [-1.0, 1.0]])
    r = _t([1.0, 2.0, 3.0, 4.0])
    # positive contributions x_i·w_ji: row 0 (2, ·) → R 1 to x0; row 1 (·, 2) → R 2 to x1; row 2 (3, 2) → 3·3/5 and
    # 3·2/5; row 3 has none (−1, −2): its relevance 4 is lost (zero denominator gives 0)
    assert vl.linear_alpha_beta(x, w, r).tolist() == pytest.approx([2.8, 3.2])
    # the bias is ignored and the sign of R is kept (negative relevance is shared the same way)
    assert vl.linear_alpha_beta(x, w[:3], -r[:3]).tolist() == pytest.approx([-2.8, -3.2])


def test_add_rule_hand_computed():
    a, b, r = _t([[1.0, 1.0]]), _t([[-3.0, 0.0]]), _t([[2.0, -1.0]])
    # z = (−2, 1), R/z = (−1, −1): shares a → (−1, −1) (Σ −2), b → (3, 0) (Σ 3); rescaled to keep Σ R = 1 in the
    # ratio 2 : 3 → a gets 0.4 = (0.2, 0.2), b gets 0.6 = (0.6, 0)
    ra, rb = vl._add(a, b, r)
    assert ra[0].tolist() == pytest.approx([0.2, 0.2]) and rb[0].tolist() == pytest.approx([0.6, 0.0])


def test_forward_reproduces_the_model(vit):
    model, x, target = vit
    rel = vl.relevance(model, x, target)
    assert torch.allclose(rel.logits, model(x), atol=1e-12)


def test_relevance_is_conserved(vit):
    model, x, target = vit
    rel = vl.relevance(model, x, target)
    pixels = rel.pixels.sum((1, 2, 3))
    # starting relevance 1 = pixels + CLS token + positional embedding (each rule keeps the total)
    total = pixels + rel.tokens[:, 0].sum(-1) + rel.positional.sum((1, 2))
    assert torch.allclose(total, torch.ones(5, dtype=torch.float64), atol=1e-6)
    assert torch.allclose(pixels, rel.tokens[:, 1:].sum((1, 2)), atol=1e-6)  # patch embedding conserves
    assert not torch.allclose(pixels, torch.ones(5, dtype=torch.float64), atol=1e-3)  # the CLS/pos shares matter
    lrp = fl.explainers.explain(model, x, target, method="lrp")
    assert lrp.shape == (5, 1, 8, 8) and torch.allclose(lrp.sum((1, 2, 3)), pixels)


def test_relevance_reaches_the_pixels_without_positional_embedding():
    model = _vit(seed=4)
    with torch.no_grad():
        model.pos_embed.zero_()
    x = torch.randn(3, 3, 8, 8, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    rel = vl.relevance(model, x, torch.tensor([2, 0, 1]))
    assert torch.allclose(rel.positional, torch.zeros_like(rel.positional))
    assert torch.allclose(rel.pixels.sum((1, 2, 3)) + rel.tokens[:, 0].sum(-1),
                          torch.ones(3, dtype=torch.float64), atol=1e-6)


def test_transformer_attribution_is_transformer_mm_when_relevance_is_attention(vit, monkeypatch):
    model, x, target = vit
    real = vl.relevance

    def attention_as_relevance(*args, **kwargs):
        rel = real(*args, **kwargs)
        rel.attention_relevance = rel.attentions
        return rel

    expected = fl.explainers.explain(model, x, target, method="transformer_mm")
    honest = fl.explainers.explain(model, x, target, method="transformer_attribution")
    monkeypatch.setattr(vit_transformer_attribution, "relevance", attention_as_relevance)
    swapped = fl.explainers.explain(model, x, target, method="transformer_attribution")
    assert torch.allclose(swapped, expected, atol=1e-10)
    assert not torch.allclose(honest, expected, atol=1e-3)


def test_partial_lrp_reads_last_block_relevance(vit):
    model, x, target = vit
    r_a = vl.relevance(model, x, target).attention_relevance[-1]
    got = fl.explainers.explain(model, x, target, method="partial_lrp", upsample="nearest")
    tokens = r_a.clamp_min(0).mean(1)[:, 0, 1:]
    assert torch.allclose(got, ve.to_pixels(tokens, model.grid, (8, 8), upsample="nearest"))
    assert bool((got >= 0).all()) and bool((got > 0).any())


def test_attcat_matches_direct_autograd(vit):
    model, x, target = vit
    outputs = []
    hooks = [blk.register_forward_hook(lambda m, i, o: outputs.append(o)) for blk in model.blocks]
    model.record_attention(True)
    try:
        logit = model(x).gather(1, target[:, None]).sum()
        maps = model.attentions()
        grads = torch.autograd.grad(logit, outputs)
    finally:
        model.record_attention(False)
        for h in hooks:
            h.remove()
    expected = sum(torch.einsum("bt,btd,btd->bt", a.mean(1)[:, 0, 1:], h[:, 1:], g[:, 1:])
                   for a, h, g in zip(maps, outputs, grads))
    got = fl.explainers.explain(model, x, target, method="attcat", upsample="nearest")
    assert torch.allclose(got, ve.to_pixels(expected.detach(), model.grid, (8, 8), upsample="nearest"), atol=1e-10)
    with pytest.raises(ValueError, match="one tensor per block"):
        ve.attcat(maps, outputs[:1], grads)


@pytest.mark.parametrize("method", ve.LRP_METHODS)
def test_batch_invariance_and_target_dependence(vit, method):
    model, x, target = vit
    full = fl.explainers.explain(model, x, target, method=method, batch_size=5)
    assert full.shape == (5, 1, 8, 8)
    assert torch.allclose(fl.explainers.explain(model, x, target, method=method, batch_size=2), full, atol=1e-10)
    other = fl.explainers.explain(model, x, (target + 1) % 3, method=method)
    assert not torch.allclose(full, other)


@pytest.mark.parametrize("method", ve.LRP_METHODS)
def test_non_vit_model_raises(method):
    cnn = fl.models.build("small_cnn", in_channels=3, n_classes=3).eval()
    with pytest.raises(TypeError, match="model must be a faithlab.models.ViT"):
        fl.explainers.explain(cnn, torch.randn(2, 3, 8, 8), 0, method=method)


def test_relevance_refuses_a_vit_with_a_stem():
    """Chefer et al.'s rules here start at the linear embedding of raw pixels: a stem would be skipped silently."""
    model = fl.models.build("vit", image_size=8, patch_size=4, in_channels=3, n_classes=3, dim=16, depth=1, heads=2,
                            stem_width=4).eval()
    x = torch.randn(2, 3, 8, 8, generator=torch.Generator().manual_seed(0))
    with pytest.raises(TypeError, match="stem_width is 4"):
        fl.explainers.explain(model, x, torch.tensor([0, 1]), method="lrp")
