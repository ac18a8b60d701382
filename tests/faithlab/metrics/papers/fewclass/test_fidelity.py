"""Few-class Fidelity's score (spec §2, ``faithlab.metrics.papers.fewclass.fidelity``): U/Δ/S/P and the Fid formula
by hand, the selection against brute force, closed-form MIF/LIF areas, invariances, and the errors torch would raise
instead named by the argument (issue 32)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from faithlab import perturb
from faithlab.metrics.papers.fewclass import fidelity as fc
from fewclass_inputs import MeanModel, images
from oracles import LinearProb, fewclass_candidates_reference, small_cnn


# --- U, Δ, S, P and Fid by hand ----------------------------------------------------------------------------


def test_uncertainty_threshold_similarity_and_score_by_hand():
    p = torch.tensor([[0.7, 0.2, 0.1], [1 / 3, 1 / 3, 1 / 3]], dtype=torch.float64)
    u = fc.uncertainty(p)
    assert u[0].item() == pytest.approx((abs(1 / 3 - 0.7) + abs(1 / 3 - 0.2) + abs(1 / 3 - 0.1)) / 3)
    assert u[1].item() == pytest.approx(0.0)
    assert fc.uncertainty(torch.tensor([0.9, 0.1])).item() == pytest.approx(0.4)
    assert fc.threshold(2) == 0.05 and fc.threshold(3) == 0.075 and fc.threshold(4) == 0.1
    assert fc.threshold(10) == 0.1
    x = torch.tensor([[[[0.0, 2.0], [1.0, 1.0]]]])
    xp = torch.tensor([[[[1.0, 2.0], [1.0, 0.0]]]])
    assert fc.similarity(x, xp).item() == pytest.approx((1 + 0 + 0 + 1) / 4 / 2 ** 2)
    assert fc.perturbation_score(torch.tensor(0.01), torch.tensor(0.001), 2).item() == pytest.approx(0.01 + 0.2)
    assert fc.perturbation_score(torch.tensor(0.0), torch.tensor(0.003), 3).item() == pytest.approx(0.4)
    logits = torch.tensor([[0.0], [2.0]])
    probs = fc.class_probabilities(logits)
    p = torch.sigmoid(torch.tensor(2.0))
    assert torch.allclose(probs[1], torch.tensor([1 - p, p]))


@pytest.mark.parametrize("n", [2, 3, 10])
def test_fid_formula_by_hand(n):
    den = 1 + (n - 1) / n
    assert fc.fid(torch.tensor(1 / n), torch.tensor(1.0), n).item() == pytest.approx(1.0)
    assert fc.fid(torch.tensor(1.0), torch.tensor(0.0), n).item() == pytest.approx(0.0)
    a_mif, a_lif = 0.6, 0.8
    assert fc.fid(torch.tensor(a_mif), torch.tensor(a_lif), n).item() == pytest.approx(
        1 - (abs(1 - a_lif) + abs(1 / n - a_mif)) / den)
    if n == 2:
        assert den == 1.5  # the code's hard-coded denominator


def test_fid_lies_in_unit_interval_for_any_areas():
    g = torch.Generator().manual_seed(0)
    areas = torch.rand(2, 10_000, generator=g, dtype=torch.float64)
    areas[:, :4] = torch.tensor([[0.0, 1.0, 0.0, 1.0], [0.0, 0.0, 1.0, 1.0]])
    for n in (2, 3, 5, 1000):
        f = fc.fid(areas[0], areas[1], n)
        assert bool((f >= 0).all() & (f <= 1).all())


# --- selection ------------------------------------------------------------------------------------------------


def _brute_force(model, x, grid):
    """Every candidate from the scipy loop, scored with numpy: U, S, P and the selection rule of spec §2.3."""
    out = []
    for b in range(x.shape[0]):
        cands = np.stack(fewclass_candidates_reference(x[b].numpy(), grid))
        with torch.no_grad():
            probs = fc.class_probabilities(model(torch.from_numpy(cands))).numpy()
        n = probs.shape[1]
        u = np.abs(probs - 1 / n).mean(axis=1)
        img = x[b].numpy()
        s = ((cands - img) ** 2).mean(axis=(1, 2, 3)) / (img.max() - img.min()) ** 2
        delta = min(0.1, n / 40)
        p = u + 10 / delta * s
        ok = u < delta
        out.append(int(np.argmin(np.where(ok, p, np.inf))) if ok.any() else int(np.argmin(u)))
    return out


def test_selection_is_argmin_p_among_uncertain_candidates():
    x = images(b=3, c=1, h=6, w=6)
    x[0] *= 0.5  # mean ≈ 0.25: close to uncertain already
    grid = fc.candidate_grid(["V1", "V2", "V3", "V8"])
    model = MeanModel().double().eval()
    sel = fc.select_perturbation(model, x, grid=grid, batch_size=50)
    assert sel["index"].tolist() == _brute_force(model, x, grid)
    assert bool(sel["passed"].any())
    v = sel["index"]
    rows = torch.arange(3)
    assert torch.equal(sel["u"], sel["all_u"][rows, v]) and torch.equal(sel["s"], sel["all_s"][rows, v])
    ref = [fewclass_candidates_reference(x[b].numpy(), [grid[int(v[b])]])[0] for b in range(3)]
    np.testing.assert_allclose(sel["image"].numpy(), np.stack(ref), atol=1e-10)
    assert sel["operation"] == [grid[int(i)][0] for i in v] and sel["delta"] == 0.075 and sel["n_classes"] == 3


def test_selection_falls_back_to_the_lowest_uncertainty():
    x = images(b=2, c=1, h=6, w=6)
    grid = fc.candidate_grid(["V1", "V3"])

    class Confident(torch.nn.Module):  # class 0 at p > 0.96 on every candidate, less so as the image flattens
        def forward(self, z):
            d = 4 + 3 * z.flatten(1).std(dim=1)
            return torch.stack([d, 0 * d, 0 * d], dim=1)

    model = Confident().double().eval()
    sel = fc.select_perturbation(model, x, grid=grid, batch_size=64)
    assert not bool(sel["passed"].any())
    assert sel["index"].tolist() == sel["all_u"].argmin(dim=1).tolist() == _brute_force(model, x, grid)


def test_selection_does_not_depend_on_batch_size():
    x = images(b=2, c=2, h=8, w=8).float()
    model = small_cnn(in_channels=2, side=8, n_classes=3)
    grid = fc.candidate_grid(["V1", "V2", "V15"])
    a = fc.select_perturbation(model, x, grid=grid, batch_size=16)
    b = fc.select_perturbation(model, x, grid=grid, batch_size=1000)
    assert torch.allclose(a["all_u"], b["all_u"], atol=1e-6) and torch.equal(a["all_s"], b["all_s"])
    assert torch.equal(a["index"], b["index"])


def test_selection_with_a_single_logit_model_uses_two_classes():
    x = images(b=2, c=1, h=6, w=6)

    class OneLogit(torch.nn.Module):
        def forward(self, z):
            return (10 * (z.mean(dim=(1, 2, 3)) - 0.3))[:, None]

    sel = fc.select_perturbation(OneLogit().double().eval(), x, grid=fc.candidate_grid(["V3"]))
    assert sel["n_classes"] == 2 and sel["delta"] == 0.05


def test_selection_refuses_a_nan_model():
    class NaN(torch.nn.Module):
        def forward(self, z):
            return torch.full((z.shape[0], 3), float("nan"))

    with pytest.raises(ValueError, match="NaN"):
        fc.select_perturbation(NaN().eval(), images().float(), grid=fc.candidate_grid(["V1"]))


# --- MIF / LIF curves -----------------------------------------------------------------------------------------


def test_mif_lif_areas_in_closed_form():
    """p(class 0) = 0.5 + Σ β_i over the pixels still showing the original (1) rather than the perturbed image
    (0); the map is β itself, so MIF removes β in descending order and LIF in ascending order."""
    n = 100
    g = torch.Generator().manual_seed(3)
    beta = torch.rand(n, generator=g, dtype=torch.float64)
    beta = 0.45 * beta / beta.sum()
    model = LinearProb(beta, q0=0.5)
    x = torch.ones(1, 1, 10, 10, dtype=torch.float64)
    perturbed = torch.zeros_like(x)
    d = fc.fewclass_fid_details(model, x, beta.view(1, 1, 10, 10), perturbed=perturbed, batch_size=37)
    desc = np.sort(beta.numpy())[::-1]
    mif = 0.5 + 0.45 - np.concatenate([[0], np.cumsum(desc)])  # k = 0..100 pixels replaced
    lif = 0.5 + 0.45 - np.concatenate([[0], np.cumsum(desc[::-1])])
    np.testing.assert_allclose(d["mif"][0].numpy(), mif, atol=1e-12)
    np.testing.assert_allclose(d["lif"][0].numpy(), lif, atol=1e-12)
    p = np.linspace(0, 1, 101)
    a_mif, a_lif = np.trapezoid(mif, p), np.trapezoid(lif, p)
    assert d["a_mif"].item() == pytest.approx(a_mif) and d["a_lif"].item() == pytest.approx(a_lif)
    assert d["score"].item() == pytest.approx(1 - (abs(1 - a_lif) + abs(0.5 - a_mif)) / 1.5)
    assert d["target"].tolist() == [0] and d["n_classes"] == 2


def test_single_logit_curves_equal_the_two_logit_model():
    x = images(b=3, c=1, h=6, w=6).float()
    net = small_cnn(in_channels=1, side=6, n_classes=1)

    class Two(torch.nn.Module):
        def forward(self, z):
            logit = net(z)
            return torch.cat([-logit / 2, logit / 2], dim=1)  # softmax = [1 − σ(z), σ(z)]

    a = torch.rand(3, 1, 6, 6, generator=torch.Generator().manual_seed(0))
    pert = torch.zeros_like(x)
    one = fc.fewclass_fid_details(net, x, a, perturbed=pert, generator=5)
    two = fc.fewclass_fid_details(Two().eval(), x, a, perturbed=pert, generator=5)
    assert torch.equal(one["target"], two["target"])
    assert torch.allclose(one["mif"], two["mif"], atol=1e-6) and torch.allclose(one["lif"], two["lif"], atol=1e-6)


def test_without_perturbed_images_the_selection_runs_with_the_given_grid_and_normalisation():
    x = images(b=3, c=2, h=8, w=8).float()
    model = small_cnn(in_channels=2, side=8, n_classes=3)
    a = torch.rand(3, 2, 8, 8, generator=torch.Generator().manual_seed(4))
    grid = fc.candidate_grid(["V1", "V2"])
    norm = ([0.3, 0.6], [0.2, 0.4])
    chosen = fc.select_perturbation(model, x, grid=grid, normalisation=norm, batch_size=50)["image"]
    given = fc.fewclass_fid_details(model, x, a, perturbed=chosen, generator=1, batch_size=50)
    found = fc.fewclass_fid_details(model, x, a, grid=grid, normalisation=norm, generator=1, batch_size=50)
    assert torch.equal(found["perturbed"], chosen) and given["perturbed"] is chosen
    for key in ("score", "mif", "lif", "a_mif", "a_lif", "target"):
        assert torch.equal(found[key], given[key]), key
    assert torch.equal(fc.fewclass_fid(model, x, a, grid=grid, normalisation=norm, generator=1, batch_size=50),
                       given["score"])
    pixels = fc.fewclass_fid_details(model, x, a, grid=grid, generator=1, batch_size=50)  # x read as pixels
    assert not torch.equal(pixels["perturbed"], chosen)


def test_curves_end_at_the_perturbed_prediction_and_are_invariant():
    x = images(b=4, c=2, h=8, w=8).float()
    model = small_cnn(in_channels=2, side=8, n_classes=3)
    pert = x.flip(-1)
    a = torch.randn(4, 2, 8, 8, generator=torch.Generator().manual_seed(1))
    d1 = fc.fewclass_fid_details(model, x, a, perturbed=pert, batch_size=7, generator=2)
    d2 = fc.fewclass_fid_details(model, x, a, perturbed=pert, batch_size=1000, generator=2)
    assert torch.allclose(d1["mif"], d2["mif"], atol=1e-6) and torch.allclose(d1["score"], d2["score"], atol=1e-6)
    with torch.no_grad():
        p_clean = model(x).softmax(1).gather(1, d1["target"][:, None])[:, 0]
        p_pert = model(pert).softmax(1).gather(1, d1["target"][:, None])[:, 0]
    for curve in (d1["mif"], d1["lif"]):
        assert torch.allclose(curve[:, 0], p_clean, atol=1e-6) and torch.allclose(curve[:, -1], p_pert, atol=1e-6)
    assert bool(((d1["score"] >= 0) & (d1["score"] <= 1)).all())


def test_random_ties_follow_the_generator_and_constant_maps_are_flagged():
    x = images(b=2, c=1, h=6, w=6).float()
    model = small_cnn(in_channels=1, side=6, n_classes=3)
    flat = torch.ones(2, 1, 6, 6)
    with pytest.warns(perturb.ConstantMapWarning):
        a = fc.fewclass_fid_details(model, x, flat, perturbed=torch.zeros_like(x), generator=1)
    with pytest.warns(perturb.ConstantMapWarning):
        b = fc.fewclass_fid_details(model, x, flat, perturbed=torch.zeros_like(x), generator=1)
    with pytest.warns(perturb.ConstantMapWarning):
        c = fc.fewclass_fid_details(model, x, flat, perturbed=torch.zeros_like(x), generator=2)
    assert torch.equal(a["mif"], b["mif"]) and not torch.equal(a["mif"], c["mif"])
    assert a["constant"].tolist() == [True, True]


def test_fid_refuses_mismatched_perturbed_images():
    x = images(b=2, c=1).float()
    model = small_cnn(in_channels=1, side=9, n_classes=3)
    with pytest.raises(ValueError, match="perturbed"):
        fc.fewclass_fid(model, x, torch.rand(2, 1, 9, 7), perturbed=torch.zeros(1, 1, 9, 7))


# --- issue 32: torch's errors ---------------------------------------------------------------------------------


def test_fewclass_names_a_target_beyond_the_model_s_classes_and_x_s_dtype():
    """A target the model has no class for, or float64 x for a float32 model, is named (target, x) instead of
    torch's "index 3 is out of bounds" or "Input type (double) and bias type (float)"."""
    model = small_cnn(in_channels=2, side=8, n_classes=3)
    x = torch.rand(2, 2, 8, 8, generator=torch.Generator().manual_seed(0))
    a = torch.rand(2, 8, 8, generator=torch.Generator().manual_seed(1))
    with pytest.raises(ValueError, match=r"^target must hold classes in \[0, 2\] \(the model returns 3 classes\), "
                                         r"got 3"):
        fc.fewclass_fid(model, x, a, perturbed=x.flip(-1), target=torch.tensor([0, 3]))
    with pytest.raises(TypeError, match=r"^target must be an int64 tensor"):
        fc.fewclass_fid_details(model, x, a, perturbed=x.flip(-1), target=torch.tensor([0.0, 1.0]))
    binary = small_cnn(in_channels=2, side=8, n_classes=1)  # one logit: classes 0 and 1
    with pytest.raises(ValueError, match=r"^target must hold classes in \[0, 1\] \(the model returns 2 classes\), "
                                         r"got 2"):
        fc.fewclass_fid(binary, x, a, perturbed=x.flip(-1), target=torch.tensor([1, 2]))
    with pytest.raises(TypeError, match=r"^x has dtype torch.float64 but model's parameters are torch.float32"):
        fc.fewclass_fid(model, x.double(), a.double(), perturbed=x.flip(-1).double(), target=torch.tensor([0, 1]))
    with pytest.raises(TypeError, match=r"^x has dtype torch.float64 but model's parameters are torch.float32"):
        fc.select_perturbation(model, x.double(), grid=fc.candidate_grid(["V1"]))


def test_fewclass_warns_once_about_constant_maps_and_flags_them():
    import warnings

    model = small_cnn(in_channels=2, side=8, n_classes=3)
    x = torch.rand(3, 2, 8, 8, generator=torch.Generator().manual_seed(0))
    a = torch.rand(3, 8, 8, generator=torch.Generator().manual_seed(1))
    a[1] = 0.0   # all zero
    a[2] = -0.5  # constant
    with pytest.warns(perturb.ConstantMapWarning, match=r"for 2 of 3 sample\(s\) \(e\.g\. \[1, 2\]\)") as record:
        d = fc.fewclass_fid_details(model, x, a, perturbed=x.flip(-1))
    assert sum(issubclass(w.category, perturb.ConstantMapWarning) for w in record) == 1
    assert d["constant"].tolist() == [False, True, True]
    with warnings.catch_warnings():  # ranked maps: no warning
        warnings.simplefilter("error", perturb.ConstantMapWarning)
        fc.fewclass_fid(model, x, torch.rand(3, 8, 8, generator=torch.Generator().manual_seed(2)), perturbed=x.flip(-1))
