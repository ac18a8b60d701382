"""ReCo and MeGe (Fel & Vigouroux 2020; spec §4), the metrics read across k cross-trained models (hence the module's
name), and the two measures the paper compares them with, μF and S_avg. The public names are gathered in
:mod:`faithlab.metrics` (``fl.metrics.reco_mege(...)``, ``fl.metrics.mu_fidelity(...)``).

k models are cross-trained on k folds (:func:`faithlab.train.cross_train`); every model explains every sample.
For a sample of block j, the model f_j that never saw it is paired with each of the k − 1 others (spec §4.1 step 4);
the distance between their explanations (d = sqrt(1 − |ρ_Spearman|) of the flattened, channel-averaged maps, spec
§4.2) goes to S= when both models are right, to S≠ when exactly one is, and is dropped when both are wrong or the
distance is NaN (a constant map). MeGe = 1/(1 + mean S=) ∈ (0.5, 1] (higher: more representative); ReCo = the best
TPR + TNR − 1 over thresholds γ with TPR(γ) = |{d ∈ S= : d < γ}|/|S=| and TNR(γ) = |{d ∈ S≠ : d > γ}|/|S≠| (recall
form, spec §4.3; every cut between consecutive values of S= ∪ S≠ is tried), clipped at 0 (higher: explanations
separate agreeing from disagreeing models).
The chance level of S= is the same pairs with the second model's map of another image (:func:`shuffled_partners`,
:func:`shuffled_distances`): explanations of the same image by two agreeing models that sit at that level share
nothing image-specific, and MeGe and ReCo computed from them compare noise.

Everything is batched tensor code on the maps' device: ranks are computed once per map (not per pair), the
exact ReCo takes one sort and cumulative counts (O(m log m)) instead of xplique's scan of every ⌈m/20⌉-th value
(:func:`reco_scan` reproduces that scan for comparison).

Two levels: :func:`reco_mege` ``(models, x, attributions, *, folds, labels)`` takes the k models and computes their
predictions; :func:`reco_mege_from_predictions` ``(maps, predictions, labels, folds)`` is the building block for
predictions already at hand (the protocols keep the families' predictions); each has a ``*_details`` twin.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from faithlab import _validate, perturb
from faithlab.metrics.statistics import pearson, rankdata

__all__ = ["DISTANCES", "PAIR_KINDS", "Pairs", "flatten_maps", "explanation_distance", "pair_distances", "split_sets",
           "shuffled_partners", "shuffled_distances", "reco", "reco_details", "reco_scan", "reco_auc", "mege",
           "reco_mege", "reco_mege_details", "reco_mege_from_predictions", "reco_mege_details_from_predictions",
           "details_from_pairs",
           "mu_fidelity", "mu_fidelity_details", "average_stability", "average_stability_details"]

DISTANCES = ("sqrt", "linear")
"""Spearman distances: ``"sqrt"`` = sqrt(1 − |ρ|) (xplique, the chosen default, spec §6.14), ``"linear"`` = 1 − |ρ|."""
PAIR_KINDS = ("S=", "S≠", "both wrong")
"""Codes 0, 1, 2 of :attr:`Pairs.kind`: both models right, exactly one right, both wrong (dropped)."""
_BLOCK = 32  # samples whose μF subsets / S_avg neighbours are drawn and held at once (memory, not results)


# ------------------------------------------------------------------------------------------------------ distances
def flatten_maps(maps: torch.Tensor, *, channel_dim: int | None = None) -> torch.Tensor:
    """Maps ``(..., *map_shape)`` → ``(..., *map_shape without the channel axis)`` float: the channel axis averaged
    first (xplique's sanitising, spec §4.2), NaN replaced by 0 (inf raises: it has no place in a ranking of map
    values). channel_dim: the axis averaged (an index of maps' dims, e.g. -3 for ``(N, C, H, W)`` maps); None keeps
    every axis. float64 maps stay float64 (their ranks are not those of the float32-rounded values); any other
    dtype is read as float32."""
    m = _validate.tensor(maps, "maps")
    if m.is_complex():
        raise TypeError(f"maps must hold real values, got dtype {m.dtype}")
    _no_inf(m, "maps")
    dtype = torch.float64 if m.dtype == torch.float64 else torch.float32
    if channel_dim is not None:
        if isinstance(channel_dim, bool) or not isinstance(channel_dim, int) or not -m.ndim <= channel_dim < m.ndim:
            raise ValueError(f"channel_dim must be an int indexing one of maps' {m.ndim} dims (shape "
                             f"{tuple(m.shape)}), got {channel_dim!r}")
        m = m.to(dtype).mean(dim=channel_dim)
    return torch.nan_to_num(m.to(dtype), nan=0.0)


def _no_inf(maps: torch.Tensor, name: str) -> None:
    """Raise if maps hold ±inf (NaN is allowed: :func:`flatten_maps` reads it as 0, as xplique does)."""
    if maps.is_floating_point() and bool(torch.isinf(maps).any()):
        raise ValueError(f"{name} contains inf values; explanation maps must be finite (NaN is read as 0)")


def _map_channel_dim(channel_dim: int | None, maps: torch.Tensor, maps_name: str = "maps") -> int | None:
    """Check channel_dim against the map axes of ``(k, N, *map_shape)`` maps → a negative index of a map axis (a
    non-negative one counts in maps' layout: 2 is the first map axis), so that it means the same axis for one
    map ``(*map_shape)`` and for a stack of them; at least one map axis must remain after averaging."""
    if channel_dim is None:
        return None
    n_map = maps.ndim - 2
    if isinstance(channel_dim, bool) or not isinstance(channel_dim, int):
        raise TypeError(f"channel_dim must be an int or None, got {type(channel_dim).__name__}")
    axis = channel_dim - maps.ndim if channel_dim >= 0 else channel_dim
    if n_map < 2 or not -n_map <= axis <= -1:
        raise ValueError(f"channel_dim={channel_dim} must index one of the {n_map} map axes of {maps_name} "
                         f"(k, N, *map_shape) of shape {tuple(maps.shape)} (-{n_map} … -1, or 2 … {maps.ndim - 1}), "
                         f"leaving at least one axis to rank")
    return axis


def explanation_distance(a: torch.Tensor, b: torch.Tensor, *, distance: str = "sqrt") -> torch.Tensor:
    """Spearman distance between flattened maps along the last dim (spec §4.2) → broadcast shape without it.

    ``"sqrt"``: sqrt(1 − |ρ|), ``"linear"``: 1 − |ρ|; ties get average ranks (scipy's ``spearmanr``). NaN where a map
    is constant (ρ undefined; such pairs are dropped from S= and S≠). 0 = same ranking (or reversed), 1 = none.
    """
    _validate.one_of(distance, "distance", DISTANCES)
    for m, name in ((a, "a"), (b, "b")):
        _validate.tensor(m, name)
        if m.is_complex():
            raise TypeError(f"{name} must hold real values, got dtype {m.dtype}")
        _no_inf(m, name)
    try:
        torch.broadcast_shapes(a.shape[:-1], b.shape[:-1])
    except RuntimeError:
        raise ValueError(f"a and b must broadcast over all but their last dim, got shapes {tuple(a.shape)} and "
                         f"{tuple(b.shape)}") from None
    if a.shape[-1:] != b.shape[-1:]:
        raise ValueError(f"a and b must hold maps of one length (last dim), got shapes {tuple(a.shape)} and "
                         f"{tuple(b.shape)}")
    return _distance_from_ranks(rankdata(a), rankdata(b), distance)


def _distance_from_ranks(ra: torch.Tensor, rb: torch.Tensor, distance: str) -> torch.Tensor:
    gap = (1.0 - pearson(ra.double(), rb.double()).abs()).clamp(min=0.0)
    return (gap.sqrt() if distance == "sqrt" else gap).float()


# --------------------------------------------------------------------------------------------------------- pairs
@dataclass(frozen=True)
class Pairs:
    """The k − 1 explanation distances of every sample (spec §4.1 steps 4–6).

    distance ``(N, k−1)`` float (NaN: a constant map); other ``(N, k−1)`` the model paired with the sample's unseen
    model ``folds[n]``; kind ``(N, k−1)`` int8 codes of :data:`PAIR_KINDS`.
    """

    distance: torch.Tensor
    other: torch.Tensor
    kind: torch.Tensor

    @property
    def dropped(self) -> dict[str, int]:
        """How many distances were left out of S= and S≠, and why."""
        nan = torch.isnan(self.distance)
        return {"both wrong": int((self.kind == 2).sum()), "NaN (constant map)": int((nan & (self.kind < 2)).sum())}


def _check_maps(maps: torch.Tensor, maps_name: str) -> tuple[int, int]:
    """Check ``(k, N, *map_shape)`` maps (k ≥ 2, N ≥ 1, real, no inf) → (k, N); messages name ``maps_name``."""
    _validate.tensor(maps, maps_name)
    if maps.ndim < 3:
        raise ValueError(f"{maps_name} must be (k, N, *map_shape) with k ≥ 2 models, got shape {tuple(maps.shape)}")
    k, n = maps.shape[:2]
    if k < 2:
        raise ValueError(f"{maps_name} must hold the explanations of k ≥ 2 models along dim 0, got k={k}")
    if n == 0:
        raise ValueError(f"{maps_name} holds no sample (N = 0), got shape {tuple(maps.shape)}")
    if maps.is_complex():
        raise TypeError(f"{maps_name} must hold real values, got dtype {maps.dtype}")
    _no_inf(maps, maps_name)
    return k, n


def _check_cross(maps: torch.Tensor, predictions: torch.Tensor | None, labels: torch.Tensor, folds: torch.Tensor,
                 maps_name: str = "maps") -> int:
    """Check the inputs of :func:`pair_distances` (predictions None: not yet computed, not checked) → k."""
    k, n = _check_maps(maps, maps_name)
    for value, name, shape in ((predictions, "predictions", (k, n)), (labels, "labels", (n,)), (folds, "folds", (n,))):
        if value is None and name == "predictions":
            continue
        _validate.tensor(value, name)
        if tuple(value.shape) != shape or value.is_floating_point() or value.is_complex() or value.dtype == torch.bool:
            raise ValueError(f"{name} must be an integer tensor of shape {shape} ({maps_name} has k={k} models and "
                             f"N={n} samples), got {tuple(value.shape)} {value.dtype}")
    for value, name in ((predictions, "predictions"), (labels, "labels")):
        if value is not None and bool((value < 0).any()):
            raise ValueError(f"{name} must hold non-negative class indices, got minimum {int(value.min())}")
    if bool(((folds < 0) | (folds >= k)).any()):
        raise ValueError(f"folds must hold each sample's unseen model index in [0, k={k}), got range "
                         f"[{int(folds.min())}, {int(folds.max())}]")
    return k


def pair_distances(maps: torch.Tensor, predictions: torch.Tensor, labels: torch.Tensor, folds: torch.Tensor, *,
                   distance: str = "sqrt", channel_dim: int | None = None, batch_size: int = 256) -> Pairs:
    """Distances between the explanation of each sample by its unseen model and by each of the k − 1 others.

    maps: ``(k, N, *map_shape)`` — ``maps[i, n]`` explains sample n by model i (explaining the class model i
    predicts, spec §6.15). predictions: ``(k, N)`` the models' predicted classes; labels ``(N,)``; folds ``(N,)`` the
    block of each sample, i.e. the index of the model not trained on it. channel_dim: as in :func:`flatten_maps`
    (-3 for ``(C, H, W)`` maps: averaged over channels). Ranks are computed once per map, ``batch_size`` samples at
    a time, on the maps' device. Returns :class:`Pairs`.
    """
    return _pair_distances(maps, predictions, labels, folds, distance=distance, channel_dim=channel_dim,
                           batch_size=batch_size)


def _pair_distances(maps: torch.Tensor, predictions: torch.Tensor, labels: torch.Tensor, folds: torch.Tensor, *,
                    distance: str, channel_dim: int | None, batch_size: int, maps_name: str = "maps") -> Pairs:
    """:func:`pair_distances`, its messages naming the caller's ``maps_name``."""
    k = _check_cross(maps, predictions, labels, folds, maps_name)
    _validate.one_of(distance, "distance", DISTANCES)
    channel_dim = _map_channel_dim(channel_dim, maps, maps_name)
    batch_size = _validate.positive_int(batch_size, "batch_size")
    n, dev = maps.shape[1], maps.device
    folds, labels, predictions = folds.to(dev).long(), labels.to(dev).long(), predictions.to(dev).long()
    # the k − 1 partners of each sample, in increasing model order
    others = torch.arange(k, device=dev).expand(n, k)
    others = others[others != folds[:, None]].view(n, k - 1)
    dist = torch.empty(n, k - 1, device=dev)
    for b0 in range(0, n, batch_size):
        b1 = min(n, b0 + batch_size)
        flat = flatten_maps(maps[:, b0:b1], channel_dim=channel_dim).flatten(2)   # (k, b, d)
        ranks = rankdata(flat)
        rows = torch.arange(b1 - b0, device=dev)
        unseen = ranks[folds[b0:b1], rows]                                          # (b, d)
        partner = ranks[others[b0:b1].T, rows[None, :]].transpose(0, 1)             # (b, k−1, d)
        dist[b0:b1] = _distance_from_ranks(unseen[:, None], partner, distance)
    right = predictions == labels[None, :]                                          # (k, N)
    rows = torch.arange(n, device=dev)
    right_unseen = right[folds, rows][:, None]
    right_other = right[others.T, rows[None, :]].T
    kind = torch.where(right_unseen & right_other, 0, torch.where(right_unseen ^ right_other, 1, 2)).to(torch.int8)
    return Pairs(dist, others, kind)


def split_sets(pairs: Pairs) -> tuple[torch.Tensor, torch.Tensor]:
    """S= and S≠ as 1-D tensors (NaN distances and both-wrong pairs dropped; see :attr:`Pairs.dropped`)."""
    ok = ~torch.isnan(pairs.distance)
    return pairs.distance[ok & (pairs.kind == 0)], pairs.distance[ok & (pairs.kind == 1)]


# ------------------------------------------------------------------------------------------- the chance level of S=
def shuffled_partners(eligible: torch.Tensor, *, generator: torch.Generator | int = 0) -> torch.Tensor:
    """Another image for every eligible sample: a random cycle through the eligible samples (each is paired with the
    next one in a random order of them, so none with itself), drawn once for the whole set from ``generator``.

    eligible: ``(N,)`` bool, the samples the shuffle runs within (e.g. those with a pair in S=). Returns ``(N,)``
    int64 on eligible's device: ``partners[n]`` ≠ n for every eligible n when at least two are eligible; n itself for
    the others (and for a lone eligible sample). The draw does not depend on how the samples are later batched."""
    _validate.tensor(eligible, "eligible", ndim=1)
    if eligible.dtype != torch.bool:
        raise TypeError(f"eligible must be a bool tensor (one flag per sample), got dtype {eligible.dtype}")
    gen = _validate.generator(generator, why="to shuffle the image pairings")
    n = eligible.shape[0]
    partners = torch.arange(n)
    pool = eligible.cpu().nonzero().flatten()
    if pool.numel() >= 2:
        order = pool[torch.randperm(pool.numel(), generator=gen)]
        partners[order] = order.roll(-1)
    return partners.to(eligible.device)


def shuffled_distances(maps: torch.Tensor, folds: torch.Tensor, partners: torch.Tensor, *, distance: str = "sqrt",
                       channel_dim: int | None = None, batch_size: int = 256) -> torch.Tensor:
    """The chance level of :func:`pair_distances`: each of its pairs with the second model's map of ANOTHER image.

    For sample n, the distance between its explanation by its unseen model ``folds[n]`` and the explanation of
    sample ``partners[n]`` (e.g. :func:`shuffled_partners`) by each of the k − 1 other models, in
    :func:`pair_distances`' order of partners and with the same Spearman distance (spec §4.2). Explanations of
    different images by two models share only what every explanation of the method shares (a centred blob, the
    image border): S= distances at this level carry no information about the image.

    maps ``(k, N, *map_shape)``, folds ``(N,)``, partners ``(N,)`` integer indices into the N samples; distance and
    channel_dim as in :func:`pair_distances`. Ranks are computed ``batch_size`` samples at a time on the maps' device
    (the result does not depend on batch_size). Returns ``(N, k − 1)`` float: NaN where a map is constant or
    ``partners[n] == n`` (no other image to pair with).
    """
    _validate.tensor(maps, "maps")
    if maps.ndim < 3 or maps.shape[0] < 2:
        raise ValueError(f"maps must be (k, N, *map_shape) with k ≥ 2 models, got shape {tuple(maps.shape)}")
    k, n = maps.shape[:2]
    for value, name in ((folds, "folds"), (partners, "partners")):
        _validate.tensor(value, name)
        if tuple(value.shape) != (n,) or value.is_floating_point() or value.is_complex() or value.dtype == torch.bool:
            raise ValueError(f"{name} must be an integer tensor of shape ({n},) (maps has N={n} samples), got "
                             f"{tuple(value.shape)} {value.dtype}")
    if bool(((folds < 0) | (folds >= k)).any()):
        raise ValueError(f"folds must hold each sample's unseen model index in [0, k={k}), got range "
                         f"[{int(folds.min())}, {int(folds.max())}]")
    if bool(((partners < 0) | (partners >= n)).any()):
        raise ValueError(f"partners must index the N={n} samples, got range [{int(partners.min())}, "
                         f"{int(partners.max())}]")
    _validate.one_of(distance, "distance", DISTANCES)
    channel_dim = _map_channel_dim(channel_dim, maps)
    batch_size = _validate.positive_int(batch_size, "batch_size")
    dev = maps.device
    folds, partners = folds.to(dev).long(), partners.to(dev).long()
    others = torch.arange(k, device=dev).expand(n, k)
    others = others[others != folds[:, None]].view(n, k - 1)
    dist = torch.empty(n, k - 1, device=dev)
    for b0 in range(0, n, batch_size):
        b1 = min(n, b0 + batch_size)
        rows = torch.arange(b0, b1, device=dev)
        unseen = rankdata(flatten_maps(maps[folds[b0:b1], rows], channel_dim=channel_dim).flatten(1))      # (b, d)
        shuffled = maps[others[b0:b1].T, partners[b0:b1][None, :]]                                # (k−1, b, ...)
        partner = rankdata(flatten_maps(shuffled, channel_dim=channel_dim).flatten(2)).transpose(0, 1)  # (b, k−1, d)
        dist[b0:b1] = _distance_from_ranks(unseen[:, None], partner, distance)
    dist[partners == torch.arange(n, device=dev)] = math.nan
    return dist


# ------------------------------------------------------------------------------------------------- ReCo and MeGe
def _sets(s_equal: torch.Tensor, s_unequal: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    out = []
    for value, name in ((s_equal, "s_equal"), (s_unequal, "s_unequal")):
        _validate.tensor(value, name, ndim=1, floating=True)
        if value.numel() == 0:
            raise ValueError(f"{name} is empty: ReCo needs distances in both S= and S≠")
        if bool(torch.isnan(value).any()):
            raise ValueError(f"{name} holds NaN distances: drop them first (split_sets does)")
        _validate.finite(value, name)   # NaN is excluded above: this refuses ±inf
        out.append(value.double())
    _validate.same_device(out[0], out[1], "s_equal", "s_unequal")
    return out[0], out[1]


def reco_details(s_equal: torch.Tensor, s_unequal: torch.Tensor) -> dict[str, torch.Tensor]:
    """TPR, TNR and TPR + TNR − 1 at a threshold just above every distinct value γ of S= ∪ S≠ — the details twin of
    :func:`reco`. TPR = |{d ∈ S= : d ≤ γ}|/|S=|, TNR = |{d ∈ S≠ : d > γ}|/|S≠|. One sort and binary searches:
    O(m log m) for m distances. Returns 1-D float64 tensors ``gamma`` (sorted distinct values), ``tpr``, ``tnr``,
    ``balanced`` (= tpr + tnr − 1)."""
    eq, ne = _sets(s_equal, s_unequal)
    eq, ne = eq.sort().values, ne.sort().values
    gamma = torch.unique(torch.cat([eq, ne]))                                     # sorted
    tpr = torch.searchsorted(eq, gamma, side="right").double() / eq.numel()     # d ≤ γ
    tnr = (ne.numel() - torch.searchsorted(ne, gamma, side="right")).double() / ne.numel()   # d > γ
    return {"gamma": gamma, "tpr": tpr, "tnr": tnr, "balanced": tpr + tnr - 1.0}


def reco(s_equal: torch.Tensor, s_unequal: torch.Tensor) -> torch.Tensor:
    """Exact ReCo (spec §4.3, Youden's J): max(0, sup over thresholds γ of TPR(γ) + TNR(γ) − 1) → 0-d float64 tensor
    in [0, 1], with the recall form TPR(γ) = |{d ∈ S= : d < γ}|/|S=|, TNR(γ) = |{d ∈ S≠ : d > γ}|/|S≠|.

    The supremum over real γ is reached just above one of the m values (between two consecutive distinct values),
    so every one of them is tried (:func:`reco_details`). Taking γ exactly at a value of S, as the paper's "γ ∈ S"
    reads, leaves that value out of both counts and is never higher. s_equal, s_unequal: 1-D float distances (S=,
    S≠), no NaN. 1: all S= below all S≠; 0: no threshold does better than chance. Higher is better."""
    return reco_details(s_equal, s_unequal)["balanced"].max().clamp(min=0.0)


def reco_scan(s_equal: torch.Tensor, s_unequal: torch.Tensor, *, n_thresholds: int = 20) -> torch.Tensor:
    """ReCo as xplique computes it (``MeGe.evaluate``), for comparison with the exact :func:`reco`: only every
    (m // n_thresholds + 1)-th sorted value of S is tried, and TPR = tp/(tp + fn), TNR = tn/(tn + fp) leave the
    values equal to γ out of both denominators (+1e-10). Starts from 0, so ≥ 0. Vectorised; 0-d float64 tensor."""
    eq, ne = _sets(s_equal, s_unequal)
    n_thresholds = _validate.positive_int(n_thresholds, "n_thresholds")
    total = torch.cat([eq, ne]).sort().values
    gamma = total[:: total.numel() // n_thresholds + 1].contiguous()
    eq, ne = eq.sort().values, ne.sort().values
    tp = torch.searchsorted(eq, gamma, side="left").double()
    fn = eq.numel() - torch.searchsorted(eq, gamma, side="right").double()
    fp = torch.searchsorted(ne, gamma, side="left").double()
    tn = ne.numel() - torch.searchsorted(ne, gamma, side="right").double()
    balanced = tp / (tp + fn + 1e-10) + tn / (tn + fp + 1e-10) - 1.0
    return balanced.max().clamp(min=0.0)


def reco_auc(s_equal: torch.Tensor, s_unequal: torch.Tensor) -> torch.Tensor:
    """ReCo_AUC (appendix A.2): ∫ (TPR(γ) + TNR(γ) − 1) dγ over the distance range [0, 1] → 0-d float64 tensor.

    For γ off the data TPR(γ) + TNR(γ) − 1 = F=(γ) − F≠(γ) (the two empirical CDFs), so the integral is exactly
    mean(S≠) − mean(S=) (the data points have measure zero). In [−1, 1]; higher is better."""
    eq, ne = _sets(s_equal, s_unequal)
    return ne.mean() - eq.mean()


def mege(s_equal: torch.Tensor) -> torch.Tensor:
    """MeGe = 1 / (1 + mean S=) (spec §4.4, eq. 8) → 0-d float64 tensor; 1 when models that agree explain alike.
    Higher is better."""
    _validate.tensor(s_equal, "s_equal", ndim=1, floating=True)
    if s_equal.numel() == 0 or bool(torch.isnan(s_equal).any()):
        raise ValueError("s_equal must be a non-empty 1-D tensor of distances without NaN")
    _validate.finite(s_equal, "s_equal")
    return 1.0 / (1.0 + s_equal.double().mean())


def reco_mege_details_from_predictions(maps: torch.Tensor, predictions: torch.Tensor, labels: torch.Tensor,
                                       folds: torch.Tensor, *, distance: str = "sqrt", channel_dim: int | None = None,
                                       batch_size: int = 256) -> dict:
    """Everything behind ReCo and MeGe for one method and one family of k cross-trained models whose predictions are
    at hand (the building block of :func:`reco_mege_details`).

    Arguments as in :func:`pair_distances`. Returns a dict: ``reco``, ``mege``, ``reco_scan`` (xplique's
    approximation), ``reco_auc`` (floats; NaN when S= or S≠ is empty), ``pairs`` (:class:`Pairs`), ``s_equal``,
    ``s_unequal`` (1-D tensors), ``curve`` (:func:`reco_details`, None if a set is empty), ``counts`` (sizes of S=,
    S≠ and of each dropped group).
    """
    return _details(maps, predictions, labels, folds, distance=distance, channel_dim=channel_dim,
                    batch_size=batch_size)


def _details(maps: torch.Tensor, predictions: torch.Tensor, labels: torch.Tensor, folds: torch.Tensor, *,
             distance: str, channel_dim: int | None, batch_size: int, maps_name: str = "maps") -> dict:
    pairs = _pair_distances(maps, predictions, labels, folds, distance=distance, channel_dim=channel_dim,
                            batch_size=batch_size, maps_name=maps_name)
    return details_from_pairs(pairs)


def details_from_pairs(pairs: Pairs) -> dict:
    """The dict of :func:`reco_mege_details_from_predictions` from already computed :class:`Pairs` (e.g. loaded from
    a cache)."""
    eq, ne = split_sets(pairs)
    out = {"pairs": pairs, "s_equal": eq, "s_unequal": ne,
           "counts": {"S=": eq.numel(), "S≠": ne.numel(), **pairs.dropped}}
    both = eq.numel() > 0 and ne.numel() > 0
    out["mege"] = float(mege(eq)) if eq.numel() else math.nan
    out["reco"] = float(reco(eq, ne)) if both else math.nan
    out["reco_scan"] = float(reco_scan(eq, ne)) if both else math.nan
    out["reco_auc"] = float(reco_auc(eq, ne)) if both else math.nan
    out["curve"] = reco_details(eq, ne) if both else None
    return out


def reco_mege_from_predictions(maps: torch.Tensor, predictions: torch.Tensor, labels: torch.Tensor,
                               folds: torch.Tensor, *, distance: str = "sqrt", channel_dim: int | None = None,
                               batch_size: int = 256) -> dict[str, float]:
    """ReCo and MeGe of one explanation method on k cross-trained models whose predictions are at hand →
    ``{"reco": …, "mege": …}`` (higher is better for both; NaN when S≠ (ReCo) or S= (both) is empty). Arguments as
    in :func:`pair_distances`; see :func:`reco_mege_details_from_predictions`."""
    d = _details(maps, predictions, labels, folds, distance=distance, channel_dim=channel_dim, batch_size=batch_size)
    return {"reco": d["reco"], "mege": d["mege"]}


def _predicted(model: Callable, x: torch.Tensor, batch_size: int) -> torch.Tensor:
    """The model's predicted class (argmax) of every clean sample → ``(B,)`` int64: the removal engine with nothing
    removed, ``batch_size`` inputs per forward call, with the engine's checks (model, x, NaN/inf logits)."""
    none = torch.zeros(x.shape[0], perturb.default_units(x).n, dtype=torch.bool, device=x.device)
    # output="predicted" does not read the target: a zero target only spares the engine a pass to predict one
    unread = torch.zeros(x.shape[0], dtype=torch.int64, device=x.device)
    return perturb.removal_outputs(model, x, none, output="predicted", target=unread, batch_size=batch_size)


def reco_mege_details(models: Sequence[Callable], x: torch.Tensor, attributions: torch.Tensor, *,
                      folds: torch.Tensor, labels: torch.Tensor, distance: str = "sqrt",
                      channel_dim: int | None = None, batch_size: int = 256) -> dict:
    """Everything behind ReCo and MeGe for one explanation method over k cross-trained models (dataset level).

    models: the k ≥ 2 eval-mode models (e.g. ``fl.train.cross_train(...).models``); x: ``(B, ...)`` the samples
    (every model predicts every sample, ``batch_size`` inputs per forward call); attributions: ``(k, B,
    *map_shape)``, ``attributions[i]`` model i's maps of every sample (explaining the class model i predicts, spec
    §6.15); folds: ``(B,)`` the index of the model not trained on each sample (``cross_train(...).folds``); labels:
    ``(B,)`` the true labels (a pair goes to S= or S≠ by which models are right). distance and channel_dim as in
    :func:`pair_distances` (-3 for ``(C, H, W)`` maps: averaged over channels).

    Returns the dict of :func:`reco_mege_details_from_predictions` (the building block, for predictions already at
    hand) with ``predictions`` ``(k, B)`` int64 added. Higher ReCo and MeGe are better.
    """
    if not isinstance(models, (list, tuple)):
        raise TypeError(f"models must be a list or tuple of the k ≥ 2 cross-trained models, got "
                        f"{type(models).__name__}")
    for i, m in enumerate(models):
        _validate.model(m, f"models[{i}]")
    _validate.tensor(x, "x")
    k, n = _check_maps(attributions, "attributions")
    if k != len(models) or x.ndim == 0 or n != x.shape[0]:
        raise ValueError(f"attributions must be (k, B, *map_shape) with k = {len(models)} models and B = "
                         f"{x.shape[0] if x.ndim else 0} samples of x, got shape {tuple(attributions.shape)}")
    _check_cross(attributions, None, labels, folds, "attributions")  # before the forward passes
    _validate.one_of(distance, "distance", DISTANCES)
    _map_channel_dim(channel_dim, attributions, "attributions")
    batch_size = _validate.positive_int(batch_size, "batch_size")
    predictions = torch.stack([_predicted(m, x, batch_size) for m in models])
    d = _details(attributions, predictions, labels, folds, distance=distance, channel_dim=channel_dim,
                 batch_size=batch_size, maps_name="attributions")
    return {**d, "predictions": predictions}


def reco_mege(models: Sequence[Callable], x: torch.Tensor, attributions: torch.Tensor, *, folds: torch.Tensor,
              labels: torch.Tensor, distance: str = "sqrt", channel_dim: int | None = None,
              batch_size: int = 256) -> dict[str, float]:
    """ReCo and MeGe of one explanation method over k cross-trained models → ``{"reco": …, "mege": …}`` (higher is
    better for both; NaN when S≠ (ReCo) or S= (both) is empty). Arguments as in :func:`reco_mege_details`."""
    d = reco_mege_details(models, x, attributions, folds=folds, labels=labels, distance=distance,
                          channel_dim=channel_dim, batch_size=batch_size)
    return {"reco": d["reco"], "mege": d["mege"]}


# ------------------------------------------------------------------------------------------------------------ μF
def mu_fidelity_details(model: Callable, x: torch.Tensor, attributions: torch.Tensor, *,
                        target: torch.Tensor | None = None, n_subsets: int = 200, subset_fraction: float = 0.15,
                        reference: perturb.Reference = "zero", units: perturb.Units | None = None,
                        output: perturb.Output = "prob", correlation: str = "pearson",
                        generator: torch.Generator | int = 0, sample_index: torch.Tensor | None = None,
                        batch_size: int = 256) -> dict[str, torch.Tensor]:
    """Per-sample μF (Bhatt et al. 2020; paper eq. 1, spec §4.6) with its raw draws.

    For each sample, ``n_subsets`` random subsets S of round(subset_fraction · n) units (pixels by default, all
    channels together) are removed (replaced by ``reference``, default 0); μF is the correlation over the subsets
    between Σ_{i∈S} e_i (unit scores = Σ over the unit's attribution elements) and f_t(x) − f_t(x with S removed),
    f = ``output`` of ``target``. correlation: ``"pearson"`` (Bhatt, the default) or ``"spearman"`` (xplique).
    Every removed input goes through :mod:`faithlab.perturb`'s engine, ``batch_size`` per forward call.

    Randomness is keyed to the sample: one root seed is drawn from ``generator`` and sample i's subsets come from its
    own stream, keyed by the root and ``sample_index[i]``, its global index (default its position in x, 0 … B − 1).
    A slice of the data evaluated with its global indices gives the rows of the whole, whatever batch_size.

    x ``(B, ...)``, attributions shaped like x (or without the channel dim), target ``(B,)`` int64 classes; None →
    the model's prediction ŷ on the clean x (the study's Table 3 protocol,
    :func:`faithlab.protocols.reco_mege.fidelity_stability`, explains and reads the true labels: ``target=y``).
    Returns ``mu_f`` ``(B,)`` (NaN where the attribution sums or the output drops are constant), ``sums`` and
    ``drops`` ``(B, n_subsets)``. Higher is better.
    """
    _validate.tensor(x, "x")
    _validate.one_of(correlation, "correlation", ("pearson", "spearman"))
    n_subsets = _validate.positive_int(n_subsets, "n_subsets")
    frac = _validate.fraction(subset_fraction, "subset_fraction", closed_low=False)
    units = perturb.default_units(x) if units is None else units
    perturb.check_attributions(attributions, x)
    scores = perturb.unit_scores(attributions, units, reduce="sum").double()
    count = round(frac * units.n)
    if count < 1:
        raise ValueError(f"subset_fraction={subset_fraction} of {units.n} units removes no unit")
    seeds = perturb.sample_seeds(generator, sample_index, x.shape[0], why="to draw the subsets")
    if isinstance(reference, torch.Tensor):   # x's rank; rows are sliced per block only if it has one per sample
        reference = perturb.make_reference(x, reference)
    if target is None:
        target = _predicted(model, x, batch_size)
    clean = perturb.removal_outputs(model, x, torch.zeros(x.shape[0], units.n, dtype=torch.bool, device=x.device),
                                    units=units, reference=reference, output=output, target=target,
                                    batch_size=batch_size)
    sums = torch.empty(x.shape[0], n_subsets, dtype=torch.float64, device=x.device)
    drops = torch.empty_like(sums)
    every = torch.ones(1, units.n, dtype=torch.bool, device=x.device)
    for b0 in range(0, x.shape[0], _BLOCK):  # all subsets of _BLOCK samples at once (B·n_subsets·n bools in all)
        b1 = min(x.shape[0], b0 + _BLOCK)
        removed = perturb.exact_subset(every.expand(b1 - b0, -1), count, generator=seeds[b0:b1], n_samples=n_subsets)
        out = perturb.removal_outputs(model, x[b0:b1], removed, units=units,
                                      reference=_rows(reference, b0, b1), output=output, target=target[b0:b1],
                                      batch_size=batch_size)
        sums[b0:b1] = (removed.double() * scores[b0:b1, None, :]).sum(-1)
        drops[b0:b1] = clean[b0:b1, None].double() - out.double()
    if correlation == "spearman":
        mu = pearson(rankdata(sums), rankdata(drops))
    else:
        mu = pearson(sums, drops)
    return {"mu_f": mu, "sums": sums, "drops": drops}


def _rows(reference: perturb.Reference, b0: int, b1: int) -> perturb.Reference:
    per_sample = isinstance(reference, torch.Tensor) and reference.shape[0] > 1
    return reference[b0:b1] if per_sample else reference


def mu_fidelity(model: Callable, x: torch.Tensor, attributions: torch.Tensor, *, target: torch.Tensor | None = None,
                n_subsets: int = 200, subset_fraction: float = 0.15, reference: perturb.Reference = "zero",
                units: perturb.Units | None = None, output: perturb.Output = "prob", correlation: str = "pearson",
                generator: torch.Generator | int = 0, sample_index: torch.Tensor | None = None,
                batch_size: int = 256) -> torch.Tensor:
    """Per-sample μF ``(B,)`` (arguments as in :func:`mu_fidelity_details`); the paper's score is the mean over
    samples (NaN rows, constant maps or outputs, left out and counted by the caller). Higher is better."""
    return mu_fidelity_details(model, x, attributions, target=target, n_subsets=n_subsets,
                               subset_fraction=subset_fraction, reference=reference, units=units, output=output,
                               correlation=correlation, generator=generator, sample_index=sample_index,
                               batch_size=batch_size)["mu_f"]


# --------------------------------------------------------------------------------------------------------- S_avg
def _takes_seeds(explainer: Callable) -> bool:
    """Whether ``explainer`` has a ``seeds`` parameter that can be passed by keyword (the explainer contract of
    :func:`faithlab.evaluate`)."""
    try:
        p = inspect.signature(explainer).parameters.get("seeds")
    except (TypeError, ValueError):  # ValueError: a callable without a signature (some builtins)
        return False
    return p is not None and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)


def _finite_maps(maps: torch.Tensor, samples: list[int], what: str, rows: int, name: str = "explainer") -> None:
    if not isinstance(maps, torch.Tensor):
        raise TypeError(f"{name} must return a tensor of maps, got {type(maps).__name__}")
    if maps.ndim == 0 or maps.shape[0] != rows:
        raise ValueError(f"{name} must return one map per input: {rows} inputs ({what}) gave maps of shape "
                         f"{tuple(maps.shape)}")
    if not bool(torch.isfinite(maps).all()):
        raise ValueError(f"{name} returned non-finite maps on {what} of samples {samples[:8]}")


def average_stability_details(model: Callable, x: torch.Tensor, attributions: torch.Tensor | None = None, *,
                              explainer: Callable[..., torch.Tensor], target: torch.Tensor | None = None,
                              n_neighbours: int = 200, radius: float = 0.1, common_noise: bool = True,
                              sample_index: torch.Tensor | None = None, generator: torch.Generator | int = 0,
                              batch_size: int = 256) -> dict[str, torch.Tensor | None]:
    """Per-sample S_avg (Bhatt et al. 2020 via the paper's eq. 2, spec §4.6, [recon] §6.16): the mean over
    ``n_neighbours`` neighbours z = x + u, u_i ~ U(−r/d, r/d) (so ‖u‖₁ ≤ r = ``radius``, d = elements of one input),
    of ‖g(x) − g(z)‖²₂, g the ``explainer``. The maps enter the distance as the explainer returns them, not
    normalised: spec §4.6 names no normalisation and xplique's AverageStability (the reference, spec §0) applies none
    (Quantus' AvgSensitivity, which divides by ‖g(x)‖, is a different metric).

    S_avg measures the explainer, not one set of maps: ``explainer(model, inputs, target) → maps`` (the contract of
    :func:`faithlab.evaluate`) is called on at most ``batch_size`` inputs at a time (x first, then the neighbours of
    several samples together), each explained for its sample's ``target``. common_noise (default True): common
    random numbers — an explainer with a ``seeds`` parameter is called as ``explainer(model, inputs, target,
    seeds=seeds)``, ``seeds`` ``(rows,)`` int64, one per input, where every neighbour of sample i carries sample i's
    own seed (e.g. ``lambda m, z, t, seeds=None: explain(m, z, t, method="smoothgrad", sample_seeds=seeds)``). A
    stochastic explainer then draws the same noise for x and for each of its neighbours, so the distance measures how
    the map changes with the input, not the explainer's Monte-Carlo noise (which would otherwise dominate: it does
    not vanish as the radius goes to 0); a deterministic explainer gives the same S_avg either way. With
    common_noise=False, or an explainer without a ``seeds`` parameter (it cannot share its noise), the explainer is
    called as ``explainer(model, inputs, target)``.

    attributions: g(x), the maps of x ``(B, ...)``; None (the default) → the explainer's own maps of x, each
    explained with its sample's seed (computed here first, as Bhatt et al. and xplique do). Maps given here are used
    as they are (Quantus' convention); they give the default's S_avg only when they are what the explainer returns
    on x with those seeds, i.e. for a deterministic explainer. The study passes None: its maps of x for μF draw a
    stochastic method's noise (SmoothGrad) from one ``generator``, not from the per-sample seeds, and with them that
    noise would enter S_avg (and change the book's S_avg of SmoothGrad).

    target: ``(B,)`` int64 classes; None → the model's prediction ŷ on the clean x (``batch_size`` inputs per
    forward call; the study explains the true labels: ``target=y``). Randomness is keyed to the sample: from
    ``generator`` one root seed is drawn, and sample i's neighbours and seed come from
    ``perturb.keyed_seed(root, sample_index[i], ·)``. sample_index: ``(B,)`` integer global indices of x's samples
    (None: 0 … B − 1), so that x split into parts with their global indices (and an int seed, or equally seeded
    generators) gives the scores of the whole; nothing depends on batch_size or on the other samples (beyond the
    float rounding of the model's other batch shapes).

    Returns ``s_avg`` ``(B,)`` float64, ``distances`` ``(B, n_neighbours)`` and ``seeds`` (the ``(B,)`` int64 seeds
    given to the explainer, None when it was called without). Lower is better (0 for an explainer whose map does not
    change within the radius).
    """
    if not callable(explainer):
        raise TypeError("explainer must be a callable(model, inputs, target) or (model, inputs, target, seeds=...) "
                        f"-> maps, got {type(explainer).__name__}")
    _validate.model(model)
    _validate.tensor(x, "x", floating=True)
    _validate.finite(x, "x")
    if target is not None:
        _validate.tensor(target, "target", ndim=1)
        if target.is_floating_point() or target.is_complex() or target.dtype == torch.bool:
            raise TypeError(f"target must be an integer tensor of class indices, got dtype {target.dtype}")
        if target.numel() and int(target.min()) < 0:
            raise ValueError(f"target must hold class indices ≥ 0, got {int(target.min())}")
        _validate.batch_match(x, target, "x", "target")
    if attributions is not None:
        _validate.tensor(attributions, "attributions")
        _validate.batch_match(x, attributions, "x", "attributions")
        _validate.same_device(x, attributions, "x", "attributions")
        _finite_maps(attributions, list(range(x.shape[0])), "x", x.shape[0], "attributions")
    s = _validate.positive_int(n_neighbours, "n_neighbours")
    r = _validate.number(radius, "radius")
    if not 0 < r < math.inf:
        raise ValueError(f"radius must be a positive finite number, got {radius}")
    if not isinstance(common_noise, bool):
        raise TypeError(f"common_noise must be a bool, got {type(common_noise).__name__}")
    batch_size = _validate.positive_int(batch_size, "batch_size")
    n = x.shape[0]
    index = perturb.sample_index(sample_index, n)
    gen = _validate.generator(generator, why="to draw the neighbours")
    root = int(torch.randint(0, 2**62, (1,), generator=gen))
    if target is None:
        target = _predicted(model, x, batch_size)
    seeds = None
    if common_noise and _takes_seeds(explainer):
        seeds = torch.tensor([perturb.keyed_seed(root, i, 1) for i in index], dtype=torch.int64, device=x.device)

    def explain(inputs: torch.Tensor, t: torch.Tensor, rows: torch.Tensor | None) -> torch.Tensor:
        return explainer(model, inputs, t) if rows is None else explainer(model, inputs, t, seeds=rows)

    if attributions is None:
        base = []
        for c0 in range(0, n, batch_size):
            c1 = min(n, c0 + batch_size)
            maps = explain(x[c0:c1], target[c0:c1], None if seeds is None else seeds[c0:c1])
            _finite_maps(maps, list(range(c0, c1)), "x", c1 - c0)
            base.append(maps)
        base = torch.cat(base)
    else:
        base = attributions.detach()
    d = x[0].numel()
    dist = torch.empty(n, s, dtype=torch.float64, device=x.device)
    for b0 in range(0, n, _BLOCK):
        b1 = min(n, b0 + _BLOCK)
        # torch has no vectorised keyed generator: the neighbours of each sample come from its own generator, keyed
        # by the root seed and the sample's global index (one call per sample, each drawing all its neighbours)
        u = torch.stack([torch.rand((s, *x.shape[1:]), dtype=torch.float64,
                                    generator=torch.Generator().manual_seed(perturb.keyed_seed(root, i, 0)))
                         for i in index[b0:b1]])
        u = (u * 2 - 1) * (r / d)
        z = (x[b0:b1, None] + u.to(x.device, x.dtype)).flatten(0, 1)
        t = target[b0:b1].repeat_interleave(s)
        zs = None if seeds is None else seeds[b0:b1].repeat_interleave(s)
        ref = base[b0:b1].repeat_interleave(s, dim=0).double()
        for c0 in range(0, z.shape[0], batch_size):
            c1 = min(z.shape[0], c0 + batch_size)
            maps = explain(z[c0:c1], t[c0:c1], None if zs is None else zs[c0:c1])
            _finite_maps(maps, sorted({b0 + i // s for i in range(c0, c1)}), "neighbours", c1 - c0)
            if maps.shape[1:] != ref.shape[1:]:
                given = "attributions has" if attributions is not None else "its maps of x have"
                raise ValueError(f"explainer returned maps of shape {tuple(maps.shape[1:])} per neighbour but {given} "
                                 f"{tuple(ref.shape[1:])} per sample")
            sq = (maps.double() - ref[c0:c1]).flatten(1).pow(2).sum(1)
            dist.view(-1)[b0 * s + c0: b0 * s + c1] = sq
    return {"s_avg": dist.mean(1), "distances": dist, "seeds": seeds}


def average_stability(model: Callable, x: torch.Tensor, attributions: torch.Tensor | None = None, *,
                      explainer: Callable[..., torch.Tensor], target: torch.Tensor | None = None,
                      n_neighbours: int = 200, radius: float = 0.1, common_noise: bool = True,
                      sample_index: torch.Tensor | None = None, generator: torch.Generator | int = 0,
                      batch_size: int = 256) -> torch.Tensor:
    """Per-sample S_avg ``(B,)`` of ``explainer`` (arguments as in :func:`average_stability_details`; attributions
    None: the explainer's maps of x); the paper reports the mean. Lower is better."""
    return average_stability_details(model, x, attributions, explainer=explainer, target=target,
                                     n_neighbours=n_neighbours, radius=radius, common_noise=common_noise,
                                     sample_index=sample_index, generator=generator,
                                     batch_size=batch_size)["s_avg"]
