"""Deletion and insertion as first-class curves, and the inputs paired curves share: the clean x and the fully
removed x go through the model once per run (``Removal.curves``, ``deletion_insertion``) and once per
``perturb.sharing()`` block (what ``fl.evaluate`` opens per chunk). Closed forms on an additive model, literal loops
of ``apply_removal`` for a CNN, and model inputs counted."""

from __future__ import annotations

import pytest
import torch
from oracles import small_cnn

import faithlab as fl

P = fl.perturb


class Counting(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model, self.inputs, self.seen = model, 0, []
        self.eval()

    def forward(self, z):
        self.inputs += z.shape[0]
        self.seen.append(z.clone())
        return self.model(z)


class Additive(torch.nn.Module):
    """logit_0(x) = Σ w·x, logit_1 = 0: with the zero reference, removing units takes their w·x away exactly."""

    def __init__(self, w):
        super().__init__()
        self.w = torch.nn.Parameter(w)
        self.eval()

    def forward(self, z):
        s = (z.flatten(1) * self.w.flatten()).sum(1)
        return torch.stack([s, torch.zeros_like(s)], 1)


def _case(seed=0, b=3, c=1, side=4, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(b, c, side, side, generator=g, dtype=dtype)
    w = torch.randn(c, side, side, generator=g, dtype=dtype)
    return x, w


def test_deletion_and_insertion_follow_their_closed_forms_on_an_additive_model():
    x, w = _case()
    model = Additive(w)
    contrib = (x * w).flatten(1)  # the exact effect of each pixel on the logit: a perfect map
    fractions = [0, 0.25, 0.5, 0.75, 1]
    d = P.deletion_insertion(model, x, contrib.view_as(x), fractions, reduce="sum", output="logit",
                             target=torch.zeros(3, dtype=torch.int64))
    top = contrib.sort(dim=1, descending=True).values.cumsum(1)  # the k most relevant pixels' sum
    total = contrib.sum(1)
    for j, f in enumerate(fractions):
        k = round(f * 16)
        kept_first = top[:, k - 1] if k else torch.zeros(3, dtype=x.dtype)
        torch.testing.assert_close(d["deletion"][:, j], total - kept_first)
        torch.testing.assert_close(d["insertion"][:, j], kept_first)
    steps = torch.tensor(fractions, dtype=x.dtype)
    torch.testing.assert_close(d["deletion_auc"], torch.trapezoid(d["deletion"], steps, dim=1))
    torch.testing.assert_close(d["insertion_auc"], torch.trapezoid(d["insertion"], steps, dim=1))
    # the perfect map against random orders: deletion falls faster and insertion rises faster
    rand = P.deletion_insertion(model, x, None, fractions, order="random", output="logit", generator=0,
                                target=torch.zeros(3, dtype=torch.int64))
    assert bool((d["deletion_auc"] <= rand["deletion_auc"] + 1e-12).all())
    assert bool((d["insertion_auc"] >= rand["insertion_auc"] - 1e-12).all())


def test_each_point_is_the_model_on_the_input_apply_removal_builds():
    """A CNN, patch units, a blur reference: every point of both curves equals a literal loop over the points."""
    g = torch.Generator().manual_seed(1)
    model = small_cnn(in_channels=2, side=8, n_classes=3).double()
    x = torch.randn(2, 2, 8, 8, generator=g, dtype=torch.float64)
    a = torch.randn(2, 2, 8, 8, generator=g, dtype=torch.float64)
    units = P.patch_units(x, 2)
    fractions = [0.0, 0.1, 0.3, 0.5, 0.95, 1.0]
    d = P.deletion_insertion(model, x, a, fractions, units=units, reference="blur")
    rank = P.ranks(P.order(P.unit_scores(a, units, reduce="sum_abs"), "morf"))
    target = model(x).argmax(1)
    for j, f in enumerate(fractions):
        k = round(f * units.n)
        deleted = P.apply_removal(x, rank < k, units, reference="blur")
        inserted = P.apply_removal(x, rank >= k, units, reference="blur")
        for curve, z in (("deletion", deleted), ("insertion", inserted)):
            want = model(z).softmax(1).gather(1, target[:, None]).squeeze(1)
            torch.testing.assert_close(d[curve][:, j], want, msg=f"{curve} at {f}")


def _read_activations(model, x) -> None:
    """The default batch size's one-input pass (once per model and input shape, cached), made before the counting
    starts, so that the counts below are the metric's own inputs."""
    fl.perturb.autobatch.default_batch_size(model, x)
    model.inputs = 0


@pytest.mark.parametrize("given_target", [False, True])
def test_the_end_points_go_through_the_model_once_per_sample(given_target):
    x, _ = _case(b=5, c=2, side=6, dtype=torch.float32)
    model = Counting(small_cnn(in_channels=2, side=6, n_classes=3))
    _read_activations(model, x)
    a = torch.randn(x.shape, generator=torch.Generator().manual_seed(3))
    fractions = [i / 20 for i in range(21)]
    n = 36
    inner = len({round(f * n) for f in fractions} - {0, n})
    target = torch.zeros(5, dtype=torch.int64) if given_target else None
    P.deletion_insertion(model, x, a, fractions, target=target)
    # the clean x (the prediction pass when the target is predicted), the fully removed x, both curves' inner points
    assert model.inputs == 5 + 5 + 2 * 5 * inner
    model.inputs = 0
    P.removal_curve(model, x, a, fractions, target=target)
    assert model.inputs == 5 + 5 + 5 * inner
    model.inputs = 0  # no end point asked: neither pass runs when the target is given
    P.removal_curve(model, x, a, [0.25, 0.5], target=torch.zeros(5, dtype=torch.int64))
    assert model.inputs == 5 * 2
    model.inputs = 0  # a count that recurs is run once
    P.removal_curve(model, x, a, [0.5, 0.5, 0.501], target=torch.zeros(5, dtype=torch.int64))
    assert model.inputs == 5


def test_curves_in_one_run_equal_the_curves_one_by_one():
    g = torch.Generator().manual_seed(4)
    model = small_cnn(in_channels=2, side=6, n_classes=3)
    x, a = torch.randn(4, 2, 6, 6, generator=g), torch.randn(4, 2, 6, 6, generator=g)
    perm = torch.stack([torch.randperm(36, generator=g) for _ in range(4)])
    fractions = [0.0, 0.2, 0.5, 0.7, 1.0]
    runner = P.Removal(model, x, reference="mean")
    got = runner.curves(a, fractions, orders=("morf", "lerf", perm, "morf"),
                        kinds=("deletion", "deletion", "insertion", "insertion"))
    alone = [P.removal_curve(model, x, a, fractions, order="morf", reference="mean"),
             P.removal_curve(model, x, a, fractions, order="lerf", reference="mean"),
             P.removal_curve(model, x, a, [1 - f for f in fractions], order=perm.flip(1), reference="mean"),
             P.removal_curve(model, x, a, [1 - f for f in fractions], order="lerf", reference="mean")]
    for k, want in enumerate(alone):
        torch.testing.assert_close(got[k], want, rtol=1e-6, atol=1e-7, msg=str(k))


def test_a_sharing_block_runs_the_end_points_once_for_every_run_on_the_same_model_and_x():
    x, _ = _case(b=4, c=2, side=6, dtype=torch.float32)
    model = Counting(small_cnn(in_channels=2, side=6, n_classes=3))
    _read_activations(model, x)
    maps = [torch.randn(x.shape, generator=torch.Generator().manual_seed(s)) for s in range(3)]
    fractions = [0.0, 0.5, 1.0]
    outside = [P.removal_curve(model, x, a, fractions, order=o) for a in maps for o in ("morf", "lerf")]
    assert model.inputs == 6 * (4 + 4 + 4)  # every run pays for its clean and fully removed images
    model.inputs = 0
    with P.sharing():
        inside = [P.removal_curve(model, x, a, fractions, order=o) for a in maps for o in ("morf", "lerf")]
        assert model.inputs == 4 + 4 + 6 * 4
        x.mul_(1.0)  # an in-place change (same values, a new version): the next run cannot trust the store
        P.removal_curve(model, x, maps[0], fractions)
        assert model.inputs == 4 + 4 + 6 * 4 + 12
        other = P.removal_curve(model, x, maps[0], fractions, reference="mean")  # another fully removed x
        assert model.inputs == 4 + 4 + 6 * 4 + 12 + 4 + 4
    for want, got in zip(outside, inside):
        torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-7)
    assert not torch.equal(other[:, -1], inside[0][:, -1])


def test_a_model_that_is_not_finite_on_an_end_point_raises():
    x, w = _case(b=2)

    def model(z):  # NaN on the fully removed input only
        s = (z.flatten(1) * w.flatten()).sum(1)
        s = torch.where(z.flatten(1).abs().sum(1) == 0, torch.nan, s)
        return torch.stack([s, torch.zeros_like(s)], 1)

    with pytest.raises(ValueError, match="NaN or inf"):
        P.deletion_insertion(model, x, x, [0.0, 0.5, 1.0])
    with pytest.raises(ValueError, match="NaN or inf"):  # insertion starts from the fully removed x
        P.deletion_insertion(model, x, x, [0.0, 0.5])
    P.removal_curve(model, x, x, [0.0, 0.5])  # a deletion curve without its last point has nothing to refuse


def test_bad_arguments_name_themselves():
    x, w = _case(b=2)
    model = Additive(w)
    runner = P.Removal(model, x)
    with pytest.raises(ValueError, match="kinds"):
        runner.curves(x, [0.5], orders=("morf",), kinds="sideways")
    with pytest.raises(ValueError, match="kinds"):
        runner.curves(x, [0.5], orders=("morf", "lerf"), kinds=("deletion",))
    with pytest.raises(TypeError, match="orders"):
        runner.curves(x, [0.5], orders=())
    with pytest.raises(TypeError, match="orders"):
        runner.curves(x, [0.5], orders="morf")
    with pytest.raises(ValueError, match="fractions"):
        P.deletion_insertion(model, x, x, [0.5, 1.5])
    with pytest.raises(ValueError, match="attributions"):
        P.deletion_insertion(model, x, None)


def test_the_sharing_hook_sees_each_shared_pass_once_and_returns_its_value():
    """on_compute wraps the computation of each shared pass (clean, fully removed) exactly once per block, its return
    value is what every run reads, and a nested block keeps the outer block's hook and store."""
    torch.manual_seed(0)
    model = Counting(small_cnn(in_channels=1, side=6, n_classes=3))
    x = torch.rand(3, 1, 6, 6)
    a = torch.rand(3, 1, 6, 6)
    seen = []

    def hook(kind, compute):
        before = model.inputs
        value = compute()
        seen.append((kind[0], model.inputs - before))
        return value

    plain = P.deletion_insertion(model, x, a, fractions=[0, 0.5, 1], batch_size=64)
    with P.sharing(hook):
        first = P.deletion_insertion(model, x, a, fractions=[0, 0.5, 1], batch_size=64)
        with P.sharing():  # nested: the same store and hook
            again = P.deletion_insertion(model, x, a.flip(-1), fractions=[0, 0.5, 1], batch_size=64)
    assert sorted(seen) == [("clean", 3), ("full", 3)]  # one per kind, for both maps and both curves
    for key in ("deletion", "insertion"):
        torch.testing.assert_close(first[key], plain[key])
        torch.testing.assert_close(again[key][:, 0], plain[key][:, 0])  # same end points
        torch.testing.assert_close(again[key][:, -1], plain[key][:, -1])


def test_saco_and_mu_fidelity_read_the_shared_clean_pass():
    """SaCo's K group removals and μF's subsets need p(target | x): inside a sharing block they read the one clean
    pass (with the prediction when target is None) instead of sending x again; the scores are those of the calls
    outside a block."""
    torch.manual_seed(0)
    model = Counting(small_cnn(in_channels=1, side=6, n_classes=3))
    x, a = torch.rand(4, 1, 6, 6), torch.rand(4, 1, 6, 6)
    alone_saco = fl.metrics.saco(model, x, a, k=3)
    alone_mu = fl.metrics.mu_fidelity(model, x, a, n_subsets=5, generator=0)
    model.inputs = 0
    with P.sharing():
        saco = fl.metrics.saco(model, x, a, k=3)
        mu = fl.metrics.mu_fidelity(model, x, a, n_subsets=5, generator=0)
    assert model.inputs == 4 + 4 * 3 + 4 * 5  # one clean pass for both, then K removals and the subsets
    torch.testing.assert_close(saco, alone_saco)
    torch.testing.assert_close(mu, alone_mu)
