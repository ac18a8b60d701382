"""The removal engine of faithlab.perturb: its flat-key row sort against torch's stable sort, the inputs it builds
against ``apply_removal`` (recorded by the model), non-finite logits refused whatever the read-out, a read-out of
several values per input, the device check before x is read, the ``Removal`` runner against the one-shot calls, and
the logits and grid chunks."""

from __future__ import annotations

import math

import pytest
import torch
from oracles import small_cnn

import faithlab as fl
from removal_fractions import FRACTIONS

P = fl.perturb


def test_fast_row_sort_equals_the_stable_sort(monkeypatch):
    """The engine's flat int64-key sort (float32/16 scores, blocks of rows) gives torch's stable row sort: ties by
    unit id, -0.0 equal to 0.0, infinities and denormals in place; also when the rows are split into blocks."""
    from faithlab.perturb import orders

    g = torch.Generator().manual_seed(0)
    special = torch.tensor([0.0, -0.0, 1e-45, -1e-45, 2.5, math.inf, -math.inf, 3e38, -3e38, 1.0])
    for blocks in (False, True):
        if blocks:  # blocks of 3 rows (a short last block joins the one before)
            monkeypatch.setattr(orders, "_SORT_ELEMENTS", 1)
            monkeypatch.setattr(orders, "_MIN_SORT_ROWS", 3)
        for _ in range(8):
            b, n = int(torch.randint(1, 40, (1,), generator=g)), int(torch.randint(1, 200, (1,), generator=g))
            s = torch.randint(-2, 3, (b, n), generator=g) * special[torch.randint(0, 10, (b, n), generator=g)]
            s = torch.where(s.isnan(), 0.0, s)
            for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
                sd = s.to(dtype)
                for how in ("morf", "lerf"):
                    want = torch.sort(sd, dim=1, descending=how == "morf", stable=True).indices
                    assert torch.equal(orders._stable_argsort(sd, how == "morf"), want), (blocks, dtype, how)
                    if dtype != torch.float64 and bool(torch.isfinite(sd).all()):
                        assert torch.equal(P.order(sd, how), want)
                        ranks = orders.order_ranks(sd, how, torch.float32)
                        assert torch.equal(ranks, P.ranks(want).float())


class _Recorder(torch.nn.Module):
    """Records every input it sees (cloned) and returns fixed random logits of a linear read-out."""

    def __init__(self, features: int, classes: int = 3):
        super().__init__()
        self.seen = []
        self.w = torch.randn(features, classes, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
        self.eval()

    def forward(self, z):
        self.seen.append(z.detach().clone())
        return z.flatten(1).to(self.w.dtype) @ self.w


def test_engine_builds_exactly_the_inputs_of_apply_removal():
    """Perturbed inputs are written as x·keep + reference·(1 - keep): equal to ``torch.where`` (apply_removal) for
    every reference, unit kind (identity pixels, channels spanned, patches, per-image segments), dtype, batch size
    and path (cumulative thresholds, given masks, lazy masks)."""
    g = torch.Generator().manual_seed(3)
    grid = torch.arange(36).view(6, 6)
    labels = torch.stack([grid % 5, grid.T // 8, grid % 5])
    for dtype, c in ((torch.float32, 2), (torch.float64, 2), (torch.float32, 1)):
        x = torch.randn(3, c, 6, 6, generator=g).to(dtype)
        a = torch.randn(3, c, 6, 6, generator=g).to(dtype)
        unit_sets = {"pixel": P.pixel_units(x), "patch": P.patch_units(x, 2), "segment": P.segment_units(labels)}
        refs = ["zero", "mean", "channel_mean", "blur", 0.5, torch.randn(c, 6, 6, generator=g).to(dtype)]
        for (name, units), ref in zip([*unit_sets.items()] * 4, [*refs, *refs[::-1]]):
            scores = P.unit_scores(a, units, reduce="sum_abs")
            ranks = P.ranks(P.order(scores, "morf"))
            counts = [round(f * units.n) for f in FRACTIONS]
            want = torch.stack([P.apply_removal(x, ranks < k, units, reference=ref) for k in counts], 1)
            # a curve runs the clean x, then the fully removed x, then each sample's distinct inner counts
            inner = sorted(set(counts) - {0, units.n})
            curve_inputs = torch.cat([x, P.apply_removal(x, torch.ones(3, units.n, dtype=torch.bool), units,
                                                         reference=ref),
                                      want[:, [counts.index(k) for k in inner]].flatten(0, 1)])
            for bs in (1, 5, 64):
                rec = _Recorder(36 * c)
                P.removal_curve(rec, x, a, FRACTIONS, reference=ref, units=units, target=torch.zeros(3).long(),
                                batch_size=bs)
                assert torch.equal(torch.cat(rec.seen), curve_inputs), (dtype, name, ref, bs)
                rec = _Recorder(36 * c)
                removed = torch.stack([ranks < k for k in counts], 1)
                P.removal_outputs(rec, x, removed, reference=ref, units=units, target=torch.zeros(3).long(),
                                  batch_size=bs)
                assert torch.equal(torch.cat(rec.seen), want.flatten(0, 1)), (dtype, name, ref, bs)
                rec = _Recorder(36 * c)
                P.masked_outputs(rec, x, lambda b0, b1, v0, v1: removed[b0:b1, v0:v1], n_variants=len(counts),
                                 reference=ref, units=units, target=torch.zeros(3).long(), batch_size=bs)
                assert torch.equal(torch.cat(rec.seen), want.flatten(0, 1)), (dtype, name, ref, bs)


def test_non_finite_logits_raise_even_when_the_read_out_is_finite():
    """A -inf logit leaves the target's probability finite; the engine still refuses it (and NaN, +inf)."""
    x = torch.randn(3, 1, 4, 4)
    a = torch.randn(3, 1, 4, 4)
    for bad in (-math.inf, math.inf, math.nan):
        def model(z, bad=bad):
            logits = torch.stack([z.flatten(1).sum(1), torch.zeros(z.shape[0])], 1)
            logits[z.flatten(1)[:, 0] == 0, 1] = bad  # inputs whose first pixel is removed
            return logits

        for output in ("prob", "logit", "log_odds", "correct"):
            with pytest.raises(ValueError, match="NaN or inf"):
                P.removal_curve(model, x, a, [0.0, 1.0], output=output, target=torch.zeros(3).long(), batch_size=2)


def test_a_callable_output_may_read_several_values_per_input():
    """output (N, K): one pass gives K read-outs, each equal to its own single read-out curve."""
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 3)).eval()
    g = torch.Generator().manual_seed(0)
    x, a = torch.randn(5, 1, 4, 4, generator=g), torch.randn(5, 1, 4, 4, generator=g)
    t = torch.tensor([0, 1, 2, 1, 0])
    both = P.removal_curve(model, x, a, FRACTIONS, target=t, batch_size=7,
                           output=lambda z, tt: torch.stack([z.softmax(1).gather(1, tt[:, None])[:, 0],
                                                             z.logsumexp(1)], dim=1))
    assert both.shape == (5, len(FRACTIONS), 2)
    torch.testing.assert_close(both[..., 0], P.removal_curve(model, x, a, FRACTIONS, target=t, output="prob"))
    torch.testing.assert_close(both[..., 1], P.removal_curve(model, x, a, FRACTIONS, target=t,
                                                             output=lambda z, _: z.logsumexp(1)))
    masks = torch.rand(5, 3, 16, generator=g) < 0.5
    out = P.removal_outputs(model, x, masks, target=t, output=lambda z, _: torch.stack([z[:, 0], z[:, 1]], 1))
    assert out.shape == (5, 3, 2)
    torch.testing.assert_close(out[..., 1], P.removal_outputs(model, x, masks, target=t,
                                                              output=lambda z, _: z[:, 1]))


def test_x_on_another_device_than_the_model_is_named_before_x_is_read():
    """The engine checks the model against x before reading x's values: x on the meta device (or any device the
    model is not on) gets the device message, not torch's "Tensor.item() cannot be called on meta tensors"."""
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(4, 2)).eval()
    x = torch.zeros(3, 1, 2, 2, device="meta")
    with pytest.raises(ValueError, match="model is on cpu but x is on meta"):
        fl.perturb.removal_curve(model, x, torch.ones(3, 1, 2, 2, device="meta"), fractions=[0.0, 0.5], order="morf",
                                 target=torch.zeros(3, dtype=torch.long, device="meta"))


def test_removal_runner_checks_once_and_equals_the_one_shot_calls(monkeypatch):
    """A bound Removal checks x (and the rest) once, however many mask sets, curves and lazy masks it runs, and
    gives bitwise the numbers of removal_outputs, removal_curve and masked_outputs; target None is predicted once."""
    model = small_cnn()
    g = torch.Generator().manual_seed(3)
    x = torch.randn(5, 2, 8, 8, generator=g)
    a = torch.randn(5, 2, 8, 8, generator=g)
    removed = torch.rand(5, 3, 64, generator=g) < 0.3
    lazy = lambda b0, b1, v0, v1: removed[b0:b1, v0:v1]  # noqa: E731
    options = dict(reference="mean", output="log_odds", batch_size=4)
    checked = []
    finite = fl._validate.finite
    monkeypatch.setattr(fl._validate, "finite", lambda t, name: checked.append(name) or finite(t, name))
    runner = P.Removal(model, x, **options)
    assert checked == ["x"] and isinstance(runner.reference, torch.Tensor)
    got = [runner.outputs(removed), runner.outputs(removed[:, 0]), runner.curve(a, FRACTIONS),
           runner.curve(None, FRACTIONS, order="random", generator=2), runner.masked(lazy, n_variants=3),
           runner.outputs(removed[:4, 1], sample=torch.tensor([4, 0, 4, 1])),
           runner.masked(lazy, n_variants=3, sample=torch.tensor([2, 2]))]
    assert checked.count("x") == 1  # none of the seven runs checked x again (a curve's attributions are new input)
    want = [P.removal_outputs(model, x, removed, **options), P.removal_outputs(model, x, removed[:, 0], **options),
            P.removal_curve(model, x, a, FRACTIONS, **options),
            P.removal_curve(model, x, None, FRACTIONS, order="random", generator=2, **options),
            P.masked_outputs(model, x, lazy, n_variants=3, **options),
            P.removal_outputs(model, x, removed[:4, 1], sample=torch.tensor([4, 0, 4, 1]), **options),
            P.masked_outputs(model, x[[2, 2]], lazy, n_variants=3, **options)]  # masks indexed by row of sample
    assert checked.count("x") == 1 + len(want)  # each one-shot call checks x once
    for r, w in zip(got, want, strict=True):
        assert r.dtype == w.dtype and torch.equal(r, w)
    predicted = model(x).argmax(dim=1)
    assert torch.equal(runner.target, predicted)  # target None: the prediction on the clean x, kept
    given = P.Removal(model, x, target=predicted.flip(0), batch_size=4)
    assert torch.equal(given.outputs(removed), P.removal_outputs(model, x, removed, target=predicted.flip(0),
                                                                 batch_size=4))


def test_removal_runner_refuses_bad_masks_and_samples_naming_them():
    model = small_cnn()
    x = torch.randn(3, 2, 8, 8)
    runner = P.Removal(model, x)
    with pytest.raises(TypeError, match="removed"):
        runner.outputs(torch.zeros(3, 64))
    with pytest.raises(ValueError, match="removed"):
        runner.outputs(torch.zeros(3, 63, dtype=torch.bool))
    with pytest.raises(ValueError, match="sample"):
        runner.outputs(torch.zeros(2, 64, dtype=torch.bool), sample=torch.tensor([0, 3]))
    with pytest.raises(TypeError, match="sample"):
        runner.masked(lambda b0, b1, v0, v1: None, n_variants=1, sample=torch.tensor([0.0]))
    with pytest.raises(ValueError, match="masks"):
        runner.masked(lambda b0, b1, v0, v1: torch.zeros(b1 - b0, v1 - v0, 5, dtype=torch.bool), n_variants=2)
    with pytest.raises(ValueError, match="order"):
        runner.curve(None, [0.5], order=torch.zeros(64, dtype=torch.int64))
    with pytest.raises(ValueError, match="fractions"):
        runner.curve(torch.randn(3, 2, 8, 8), [1.5])
    with pytest.raises(ValueError, match="target"):
        P.Removal(model, x, target=torch.zeros(2, dtype=torch.int64))


def test_logits_and_grid_chunks():
    """logits: batch_size inputs per call, equal to one call, NaN named by sample; grid_chunks: full chunks of the
    row-major (sample, variant) grid, every cell once, in order."""
    model = small_cnn()
    x = torch.randn(7, 2, 8, 8)
    with torch.no_grad():
        whole = model(x)
    torch.testing.assert_close(P.logits(model, x, batch_size=3), whole)

    class NaNOnSample(torch.nn.Module):
        def forward(self, inputs):
            out = model(inputs)
            return torch.where((inputs.flatten(1)[:, :1] == 7.0), torch.nan, out)

    bad = x.clone()
    bad[5].view(-1)[0] = 7.0
    with pytest.raises(ValueError, match=r"NaN or inf on 1 of 7 clean inputs \(sample\(s\) \[5\]"):
        P.logits(NaNOnSample().eval(), bad, batch_size=2, what="clean inputs")
    assert P.logits(NaNOnSample().eval(), bad, finite=False)[5].isnan().all()
    chunks = list(P.grid_chunks(3, 5, batch_size=4))
    sizes = [sum((b1 - b0) * (v1 - v0) for b0, b1, v0, v1 in pieces) for pieces in chunks]
    assert sizes == [4, 4, 4, 3]
    cells = [(b, v) for pieces in chunks for b0, b1, v0, v1 in pieces for b in range(b0, b1) for v in range(v0, v1)]
    assert cells == [(b, v) for b in range(3) for v in range(5)]
    assert chunks[1] == [(0, 1, 4, 5), (1, 2, 0, 3)]
    with pytest.raises(ValueError, match="batch_size"):
        list(P.grid_chunks(3, 5, batch_size=0))
