"""A fitted decision tree as a torch module: a transparent model that is not additive.

Why this module exists: scikit-learn's trees have no torch forward pass, and every metric of the study calls the
model as a batched torch function (``model(x) → (B, n_classes)``) on removed copies of x. :class:`DecisionTree` reads
a fitted ``sklearn.tree.DecisionTreeClassifier``'s arrays (``tree_.feature``, ``threshold``, ``children_left``/
``children_right``, ``value``, ``impurity``) into buffers and walks the root-to-leaf paths of a whole batch at once,
one tree level per step (no per-sample Python loop, no numpy round-trip). The output is piecewise constant in x:
it has no useful gradient, so gradient explainers and metrics that explain through the model do not apply.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from faithlab import _validate

__all__ = ["DecisionTree"]


class DecisionTree(nn.Module):
    """Binary decision tree classifier over the flattened input: node ``n`` sends x left when
    ``x_flat[feature[n]] <= threshold[n]`` (compared in float64, as scikit-learn does with float32 inputs and
    float64 thresholds), a leaf holds the class distribution.

    Build it with :meth:`from_sklearn` (a fitted ``DecisionTreeClassifier``) or from the arrays: ``feature``,
    ``left``, ``right`` ``(n_nodes,)`` int64 (leaves: ``left == right == -1``), ``threshold`` ``(n_nodes,)``,
    ``proba`` ``(n_nodes, n_classes)`` the class probabilities of each node (rows of leaves sum to 1),
    ``impurity`` ``(n_nodes,)``; ``shape``: the input's shape without the batch dimension.

    ``forward(x)`` returns log-probabilities ``(B, n_classes)``, floored at ``log(floor)`` so that a pure leaf's zero
    probabilities stay finite (softmax of the output equals :meth:`predict_proba` within ``n_classes · floor``);
    :meth:`predict_proba` gives the exact leaf probabilities; :meth:`path_importance` the tree's own explanation.
    The module has buffers and no parameters; ``.to(device)`` moves it.
    """

    def __init__(self, feature: torch.Tensor, threshold: torch.Tensor, left: torch.Tensor, right: torch.Tensor,
                 proba: torch.Tensor, impurity: torch.Tensor, *, shape: tuple[int, ...], floor: float = 1e-6) -> None:
        super().__init__()
        names = {"feature": feature, "threshold": threshold, "left": left, "right": right, "impurity": impurity}
        for name, t in names.items():
            _validate.tensor(t, name, ndim=1)
        _validate.tensor(proba, "proba", ndim=2)
        n = feature.shape[0]
        for name, t in {**names, "proba": proba}.items():
            if t.shape[0] != n:
                raise ValueError(f"{name} must have one row per node ({n}, from feature), got {tuple(t.shape)}")
        self.shape = tuple(_validate.positive_int(s, "shape") for s in shape)
        self.n_features = math.prod(self.shape)
        leaf = left < 0
        if not torch.equal(leaf, right < 0):
            raise ValueError("left and right must mark the same nodes as leaves (-1 in both)")
        inner = ~leaf
        if bool(((left[inner] <= 0) | (left[inner] >= n) | (right[inner] <= 0) | (right[inner] >= n)).any()):
            raise ValueError(f"left and right must index child nodes in 1..{n - 1} for every inner node")
        if bool(((feature[inner] < 0) | (feature[inner] >= self.n_features)).any()):
            raise ValueError(f"feature must index the {self.n_features} input elements of shape {self.shape}")
        floor = _validate.number(floor, "floor")
        if not 0 < floor < 1:
            raise ValueError(f"floor must lie in (0, 1), got {floor}")
        proba = proba.detach().to(torch.float64)
        if bool(((proba[leaf].sum(1) - 1).abs() > 1e-6).any()) or bool((proba < 0).any()):
            raise ValueError("proba must hold non-negative rows that sum to 1 at every leaf")
        self.floor = floor
        # leaves point to themselves, so a batch can keep stepping after some of its samples reached their leaf
        idx = torch.arange(n)
        self.register_buffer("feature", torch.where(leaf, 0, feature.long()))
        self.register_buffer("threshold", threshold.detach().to(torch.float64))
        self.register_buffer("left", torch.where(leaf, idx, left.long()))
        self.register_buffer("right", torch.where(leaf, idx, right.long()))
        self.register_buffer("leaf", leaf)
        self.register_buffer("proba", proba)
        self.register_buffer("impurity", impurity.detach().to(torch.float64))
        self.depth = self._depth()

    @classmethod
    def from_sklearn(cls, estimator, *, shape: tuple[int, ...], floor: float = 1e-6) -> "DecisionTree":
        """The torch twin of a fitted ``sklearn.tree.DecisionTreeClassifier`` (single output, classes 0..K−1) trained
        on inputs flattened from ``shape``."""
        tree = getattr(estimator, "tree_", None)
        if tree is None:
            raise TypeError(f"estimator must be a fitted sklearn DecisionTreeClassifier, got "
                            f"{type(estimator).__name__}")
        if tree.n_outputs != 1:
            raise ValueError(f"estimator must have one output, got {tree.n_outputs}")
        classes = [int(c) for c in getattr(estimator, "classes_", [])]
        if classes != list(range(len(classes))):
            raise ValueError(f"estimator's classes must be 0..K−1 (the logits' columns), got {classes}")
        if tree.n_features != math.prod(shape):
            raise ValueError(f"shape {tuple(shape)} has {math.prod(shape)} elements but estimator was fitted on "
                             f"{tree.n_features} features")
        t = {name: torch.from_numpy(getattr(tree, name).copy()) for name in
             ("feature", "threshold", "children_left", "children_right", "impurity")}
        # scikit-learn ≥ 1.4 stores each node's class fractions in ``value`` and predict_proba returns the leaf's row
        # as it is: taken as it is here too, so that predict_proba matches it bit for bit
        proba = torch.from_numpy(tree.value[:, 0, :].astype("float64"))
        return cls(t["feature"], t["threshold"], t["children_left"], t["children_right"], proba, t["impurity"],
                   shape=tuple(shape), floor=floor)

    def _depth(self) -> int:
        """Number of edges on the longest root-to-leaf path (level-by-level, batched over the nodes)."""
        depth, frontier = 0, torch.zeros(1, dtype=torch.long)
        while not bool(self.leaf[frontier].all()):
            inner = frontier[~self.leaf[frontier]]
            frontier = torch.cat([self.left[inner], self.right[inner]])
            depth += 1
        return depth

    def _flat(self, x: torch.Tensor) -> torch.Tensor:
        _validate.tensor(x, "x", floating=True)
        if x.ndim < 2 or tuple(x.shape[1:]) != self.shape:
            raise ValueError(f"x must be (B, {', '.join(map(str, self.shape))}), got {tuple(x.shape)}")
        if x.device != self.feature.device:
            raise ValueError(f"x is on {x.device} but the tree is on {self.feature.device}; move them to the same "
                             "device (tree.to(x.device))")
        # scikit-learn compares float32 inputs with float64 thresholds: the same here, exactly
        return x.detach().flatten(1).to(torch.float32).to(torch.float64)

    def _steps(self, flat: torch.Tensor):
        """Yield (node, child) ``(B,)`` for every level of the batch's paths (a leaf is its own child)."""
        node = torch.zeros(flat.shape[0], dtype=torch.long, device=flat.device)
        for _ in range(self.depth):
            go_left = flat.gather(1, self.feature[node][:, None])[:, 0] <= self.threshold[node]
            child = torch.where(go_left, self.left[node], self.right[node])
            yield node, child
            node = child

    def apply(self, x: torch.Tensor) -> torch.Tensor:
        """Index of the leaf each sample reaches → ``(B,)`` int64 (scikit-learn's ``apply``)."""
        flat = self._flat(x)
        node = torch.zeros(flat.shape[0], dtype=torch.long, device=flat.device)
        for _, child in self._steps(flat):
            node = child
        return node

    def predict_proba(self, x: torch.Tensor) -> torch.Tensor:
        """Class probabilities of the leaf each sample reaches → ``(B, n_classes)`` float64 (scikit-learn's
        ``predict_proba``, exactly)."""
        return self.proba[self.apply(x)]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Log-probabilities of the leaf each sample reaches, floored at ``log(floor)`` → ``(B, n_classes)`` in x's
        dtype (logits: their softmax is the leaf's distribution within ``n_classes · floor``)."""
        return self.predict_proba(x).clamp_min(self.floor).log().to(x.dtype)

    def path_importance(self, x: torch.Tensor) -> torch.Tensor:
        """The tree's perfect explanation of each sample (Miró-Nicolau et al. 2024, "A comprehensive study on fidelity
        metrics for XAI"; as the authors' code ``transparent_XAI.decision_tree.attribute`` computes it) → x's shape
        and dtype.

        Along the sample's root-to-leaf path, every split node n sending x to child c adds the impurity drop
        ``impurity[n] − impurity[c]`` to the feature n splits on (a feature split on twice gets both drops; the drop
        is not weighted by node sizes, and it is negative where the child taken is less pure than its parent); the
        map is divided by its sum, which telescopes to ``impurity[root] − impurity[leaf]``. Every other element is
        0. A sample whose leaf is as impure as the root (a tree that is a single leaf) gets a zero map.
        The map does not depend on the class explained: the path decides the whole output. [recon] The unweighted
        drop and the normalisation follow the authors' published code; the paper's equation was not available to
        check against it."""
        flat = self._flat(x)
        scores = torch.zeros_like(flat)
        for node, child in self._steps(flat):
            drop = torch.where(self.leaf[node], 0.0, self.impurity[node] - self.impurity[child])
            scores.scatter_add_(1, self.feature[node][:, None], drop[:, None])
        total = scores.sum(1, keepdim=True)
        scores = torch.where(total == 0, 0.0, scores / torch.where(total == 0, 1.0, total))
        return scores.view(x.shape).to(x.dtype)

    def extra_repr(self) -> str:
        return (f"nodes={self.feature.shape[0]}, depth={self.depth}, features={self.n_features}, "
                f"classes={self.proba.shape[1]}")
