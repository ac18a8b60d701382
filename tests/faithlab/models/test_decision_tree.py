"""faithlab.models.DecisionTree: the torch twin of a fitted scikit-learn tree (same leaves and probabilities, bit for
bit, on the canvas digits) and its perfect explanation (Miró-Nicolau et al.'s impurity drops along the decision
path) on a hand-built tree and against a per-sample reference walk."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from sklearn.tree import DecisionTreeClassifier

import faithlab as fl
from faithlab.models import DecisionTree

# A hand-built tree on (1, 2, 2) inputs (features 0..3). Node 5 is less pure than its parent (a negative drop).
#            0: x[2] <= 0.5 (imp 0.6)
#           /                     \
#   1: x[0] <= -1 (imp 0.5)      2: leaf (imp 0.2) [0.1, 0.9]
#     /            \
# 3: leaf (0.0)   4: x[2] <= 2 (imp 0.3)
#   [1, 0]          /          \
#           5: leaf (0.35)   6: leaf (0.0)
#             [0.5, 0.5]       [0, 1]
FEATURE = [2, 0, -2, -2, 2, -2, -2]
THRESHOLD = [0.5, -1.0, -2.0, -2.0, 2.0, -2.0, -2.0]
LEFT = [1, 3, -1, -1, 5, -1, -1]
RIGHT = [2, 4, -1, -1, 6, -1, -1]
IMPURITY = [0.6, 0.5, 0.2, 0.0, 0.3, 0.35, 0.0]
PROBA = [[0.5, 0.5], [0.6, 0.4], [0.1, 0.9], [1.0, 0.0], [0.3, 0.7], [0.5, 0.5], [0.0, 1.0]]


def _tiny(**kw) -> DecisionTree:
    t = lambda v, dt=torch.int64: torch.tensor(v, dtype=dt)  # noqa: E731
    return DecisionTree(t(FEATURE), t(THRESHOLD, torch.float64), t(LEFT), t(RIGHT), t(PROBA, torch.float64),
                        t(IMPURITY, torch.float64), shape=(1, 2, 2), **kw).eval()


def _x(rows) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.float32).view(-1, 1, 2, 2)


def test_hand_built_tree_leaves_probabilities_and_path_explanation():
    tree = _tiny()
    assert tree.depth == 3
    x = _x([[0.0, 9.0, 0.0, 9.0],     # 0 → 1 → 4 → 5: drops f2 0.1, f0 0.2, f2 −0.05
            [-2.0, 5.0, 0.5, 7.0],    # 0 → 1 → 3 (x[2] = threshold goes left): f2 0.1, f0 0.5
            [3.0, 0.0, 1.0, 0.0]])    # 0 → 2: f2 0.4
    assert tree.apply(x).tolist() == [5, 3, 2]
    torch.testing.assert_close(tree.predict_proba(x), torch.tensor([[0.5, 0.5], [1.0, 0.0], [0.1, 0.9]],
                                                                   dtype=torch.float64), rtol=0, atol=0)
    logits = tree(x)
    assert logits.dtype == torch.float32 and bool(torch.isfinite(logits).all())
    torch.testing.assert_close(logits, torch.tensor([[0.5, 0.5], [1.0, 1e-6], [0.1, 0.9]]).log())
    expected = torch.tensor([[0.2 / 0.25, 0, 0.05 / 0.25, 0],   # sums to impurity[root] − impurity[leaf] = 0.25
                             [0.5 / 0.6, 0, 0.1 / 0.6, 0],
                             [0, 0, 1.0, 0]]).view(3, 1, 2, 2)
    explanation = tree.path_importance(x)
    assert explanation.shape == x.shape and explanation.dtype == x.dtype
    torch.testing.assert_close(explanation, expected)


def test_a_tree_that_is_one_leaf_gives_zero_maps_and_its_class_distribution():
    one = DecisionTree(torch.tensor([-2]), torch.tensor([-2.0]), torch.tensor([-1]), torch.tensor([-1]),
                       torch.tensor([[0.25, 0.75]]), torch.tensor([0.4]), shape=(4,)).eval()
    x = torch.randn(5, 4)
    assert one.depth == 0
    assert torch.equal(one.path_importance(x), torch.zeros(5, 4))
    torch.testing.assert_close(one(x).exp(), torch.tensor([[0.25, 0.75]]).expand(5, 2))


def _walk(estimator, row: np.ndarray) -> np.ndarray:
    """Reference: one sample's path explanation, walked node by node (the paper's algorithm, per sample)."""
    t = estimator.tree_
    out, node = np.zeros(row.shape[0]), 0
    while t.children_left[node] != t.children_right[node]:
        child = t.children_left[node] if row[t.feature[node]] <= t.threshold[node] else t.children_right[node]
        out[t.feature[node]] += t.impurity[node] - t.impurity[child]
        node = child
    return out / out.sum() if out.sum() != 0 else out


@pytest.fixture(scope="module")
def fitted():
    canvas = dict(size=16, r=0.3, color=False, seed=0)
    train = fl.data.load("canvas_digits", split="train", **canvas)
    test = fl.data.load("canvas_digits", split="test", **canvas)
    estimator = DecisionTreeClassifier(max_depth=7, random_state=0).fit(train.x.flatten(1).numpy(), train.y.numpy())
    return estimator, DecisionTree.from_sklearn(estimator, shape=(1, 16, 16)).eval(), train.x, test.x


def test_equals_sklearn_exactly_on_the_canvas_digits(fitted):
    estimator, tree, train_x, test_x = fitted
    assert tree.depth == estimator.get_depth()
    for x in (train_x, test_x):
        flat = x.flatten(1).numpy()
        assert torch.equal(tree.apply(x), torch.from_numpy(estimator.apply(flat)).long())
        assert torch.equal(tree.predict_proba(x), torch.from_numpy(estimator.predict_proba(flat)))
        assert torch.equal(tree(x).argmax(1), torch.from_numpy(estimator.predict(flat)).long())
    # inputs exactly at the thresholds (canvas pixels repeat): the same side as scikit-learn
    inner = estimator.tree_.children_left >= 0
    at = test_x[:1].flatten(1).repeat(int(inner.sum()), 1)
    at[torch.arange(at.shape[0]), torch.from_numpy(estimator.tree_.feature[inner]).long()] = torch.from_numpy(
        estimator.tree_.threshold[inner]).float()
    assert torch.equal(tree.predict_proba(at.view(-1, 1, 16, 16)),
                       torch.from_numpy(estimator.predict_proba(at.numpy())))


def test_path_explanation_equals_the_per_sample_walk_and_is_batch_invariant(fitted):
    estimator, tree, _, test_x = fitted
    x = test_x[:64]
    ours = tree.path_importance(x)
    ref = np.stack([_walk(estimator, row) for row in x.flatten(1).numpy()])
    torch.testing.assert_close(ours.flatten(1).double(), torch.from_numpy(ref), rtol=1e-6, atol=1e-7)
    assert torch.equal(torch.cat([tree.path_importance(x[:5]), tree.path_importance(x[5:])]), ours)
    assert torch.equal(torch.cat([tree(x[:5]), tree(x[5:])]), tree(x))
    nonzero = (ours.flatten(1) != 0).sum(1)
    assert int(nonzero.max()) <= tree.depth and bool((nonzero >= 1).all())
    torch.testing.assert_close(ours.flatten(1).sum(1), torch.ones(64))


def test_no_parameters_and_no_gradient_to_the_input(fitted):
    _, tree, _, test_x = fitted
    assert list(tree.parameters()) == []
    x = test_x[:3].clone().requires_grad_(True)
    assert not tree(x).requires_grad  # piecewise constant: gradient explainers do not apply


def test_argument_errors(fitted):
    estimator, tree, _, test_x = fitted
    with pytest.raises(ValueError, match=r"x must be \(B, 1, 16, 16\)"):
        tree(test_x[:2, :, :8])
    with pytest.raises(TypeError, match="x must be a floating-point tensor"):
        tree(torch.zeros(2, 1, 16, 16, dtype=torch.int64))
    with pytest.raises(ValueError, match="shape .* has 64 elements but estimator was fitted on 256"):
        DecisionTree.from_sklearn(estimator, shape=(1, 8, 8))
    with pytest.raises(TypeError, match="estimator must be a fitted sklearn DecisionTreeClassifier"):
        DecisionTree.from_sklearn(DecisionTreeClassifier(), shape=(1, 16, 16))
    shifted = DecisionTreeClassifier(max_depth=2, random_state=0).fit(np.eye(4), np.array([1, 2, 3, 1]))
    with pytest.raises(ValueError, match="classes must be 0..K−1"):
        DecisionTree.from_sklearn(shifted, shape=(4,))
    t = lambda v, dt=torch.int64: torch.tensor(v, dtype=dt)  # noqa: E731
    with pytest.raises(ValueError, match="feature must index the 4 input elements"):
        DecisionTree(t([7, -2, -2]), t([0.0, 0, 0], torch.float64), t([1, -1, -1]), t([2, -1, -1]),
                     t([[1.0, 0], [1, 0], [0, 1]], torch.float64), t([0.5, 0, 0], torch.float64), shape=(4,))
    with pytest.raises(ValueError, match="proba must hold non-negative rows that sum to 1"):
        DecisionTree(t([0, -2, -2]), t([0.0, 0, 0], torch.float64), t([1, -1, -1]), t([2, -1, -1]),
                     t([[1.0, 0], [3, 0], [0, 1]], torch.float64), t([0.5, 0, 0], torch.float64), shape=(4,))
    with pytest.raises(ValueError, match="floor must lie in"):
        _tiny(floor=0.0)
    assert math.isclose(_tiny(floor=1e-3)(_x([[-2.0, 0, 0, 0]]))[0, 1].exp().item(), 1e-3, rel_tol=1e-5)
