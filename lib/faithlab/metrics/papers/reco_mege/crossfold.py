"""ReCo and MeGe (Fel & Vigouroux 2020; spec §4), the metrics read across k cross-trained models (hence the module's
name). The public names are gathered in :mod:`faithlab.metrics` (``fl.metrics.reco_mege(...)``); the two measures
the paper compares them with, μF and S_avg (Bhatt et al. 2020), live in
:mod:`faithlab.metrics.papers.reco_mege.baselines`.

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

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from faithlab import _validate, perturb
from faithlab.metrics.registry import Context, Metric, Shared, explained, register
from faithlab.metrics.statistics import pearson, rankdata
from faithlab.perturb import autobatch
from faithlab.perturb.autobatch import BatchSize

__all__ = ["DISTANCES", "PAIR_KINDS", "Pairs", "flatten_maps", "explanation_distance", "pair_distances", "split_sets",
           "shuffled_partners", "shuffled_distances", "reco", "reco_details", "reco_scan", "reco_auc", "mege",
           "reco_mege", "reco_mege_details", "reco_mege_from_predictions", "reco_mege_details_from_predictions",
           "details_from_pairs", "reco_mege_of_explainer"]

DISTANCES = ("sqrt", "linear")
"""Spearman distances: ``"sqrt"`` = sqrt(1 − |ρ|) (xplique, the chosen default, spec §6.14), ``"linear"`` = 1 − |ρ|."""
PAIR_KINDS = ("S=", "S≠", "both wrong")
"""Codes 0, 1, 2 of :attr:`Pairs.kind`: both models right, exactly one right, both wrong (dropped)."""


# ------------------------------------------------------------------------------------------------------ distances
def flatten_maps(maps: torch.Tensor, *, channel_dim: int | None = None) -> torch.Tensor:
    """Maps ``(..., *map_shape)`` → ``(..., *map_shape without the channel axis)`` float: the channel axis averaged
    first (xplique's sanitising, spec §4.2), NaN replaced by 0 (inf raises: it has no place in a ranking of map
    values). channel_dim: the axis averaged (an index of maps' dims, e.g. -3 for ``(N, C, H, W)`` maps); None keeps
    every axis. float64 maps stay float64 (their ranks are not those of the float32-rounded values); any other
    dtype is read as float32."""
    m = _real_maps(maps, "maps")
    if channel_dim is not None:
        if isinstance(channel_dim, bool) or not isinstance(channel_dim, int) or not -m.ndim <= channel_dim < m.ndim:
            raise ValueError(f"channel_dim must be an int indexing one of maps' {m.ndim} dims (shape "
                             f"{tuple(m.shape)}), got {channel_dim!r}")
    return _flatten(m, channel_dim)


def _real_maps(maps: torch.Tensor, name: str) -> torch.Tensor:
    """The checks of :func:`flatten_maps`: a real tensor without ±inf (one host sync)."""
    m = _validate.tensor(maps, name)
    if m.is_complex():
        raise TypeError(f"{name} must hold real values, got dtype {m.dtype}")
    _no_inf(m, name)
    return m


def _flatten(m: torch.Tensor, channel_dim: int | None) -> torch.Tensor:
    """:func:`flatten_maps` of maps checked by :func:`_real_maps` and a checked channel_dim: no host sync, for the
    chunks of a loop."""
    dtype = torch.float64 if m.dtype == torch.float64 else torch.float32
    if channel_dim is not None:
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
    _validate.one_device(a=a, b=b)  # before any value is read
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
    _validate.one_device(**{maps_name: maps, "predictions": predictions, "labels": labels, "folds": folds})
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
                   distance: str = "sqrt", channel_dim: int | None = None, batch_size: BatchSize = None) -> Pairs:
    """Distances between the explanation of each sample by its unseen model and by each of the k − 1 others.

    maps: ``(k, N, *map_shape)`` — ``maps[i, n]`` explains sample n by model i (explaining the class model i
    predicts, spec §6.15). predictions: ``(k, N)`` the models' predicted classes; labels ``(N,)``; folds ``(N,)`` the
    block of each sample, i.e. the index of the model not trained on it. channel_dim: as in :func:`flatten_maps`
    (-3 for ``(C, H, W)`` maps: averaged over channels). Ranks are computed once per map, ``batch_size`` samples at
    a time, on the maps' device: an int or ``"auto"``, as many samples as the k maps of
    :data:`~faithlab.perturb.autobatch.MAP_ELEMENTS` elements hold (no model is called here: the chunks bound
    memory); the result does not depend on it. Returns :class:`Pairs`.
    """
    return _pair_distances(maps, predictions, labels, folds, distance=distance, channel_dim=channel_dim,
                           batch_size=batch_size)


def _pair_distances(maps: torch.Tensor, predictions: torch.Tensor, labels: torch.Tensor, folds: torch.Tensor, *,
                    distance: str, channel_dim: int | None, batch_size: BatchSize,
                    maps_name: str = "maps") -> Pairs:
    """:func:`pair_distances`, its messages naming the caller's ``maps_name``."""
    if not isinstance(predictions, torch.Tensor):
        raise TypeError(f"predictions must be a (k, N) integer tensor of each model's predicted class per sample, got "
                        f"{type(predictions).__name__}")
    k = _check_cross(maps, predictions, labels, folds, maps_name)
    _validate.one_of(distance, "distance", DISTANCES)
    channel_dim = _map_channel_dim(channel_dim, maps, maps_name)
    batch_size = autobatch.map_chunk(batch_size, k * math.prod(maps.shape[2:]))
    n, dev = maps.shape[1], maps.device
    folds, labels, predictions = folds.to(dev).long(), labels.to(dev).long(), predictions.to(dev).long()
    # the k − 1 partners of each sample, in increasing model order
    others = torch.arange(k, device=dev).expand(n, k)
    others = others[others != folds[:, None]].view(n, k - 1)
    dist = torch.empty(n, k - 1, device=dev)
    _real_maps(maps, maps_name)  # once, not per chunk: no host sync in the loop
    for b0 in range(0, n, batch_size):
        b1 = min(n, b0 + batch_size)
        flat = _flatten(maps[:, b0:b1], channel_dim).flatten(2)                   # (k, b, d)
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
    partners = torch.arange(n, device="cpu")  # drawn on the CPU (the generator's draws do not depend on the device)
    pool = eligible.cpu().nonzero().flatten()
    if pool.numel() >= 2:
        order = pool[torch.randperm(pool.numel(), generator=gen, device=gen.device).to(pool.device)]
        partners[order] = order.roll(-1)
    return partners.to(eligible.device)


def shuffled_distances(maps: torch.Tensor, folds: torch.Tensor, partners: torch.Tensor, *, distance: str = "sqrt",
                       channel_dim: int | None = None, batch_size: BatchSize = None) -> torch.Tensor:
    """The chance level of :func:`pair_distances`: each of its pairs with the second model's map of ANOTHER image.

    For sample n, the distance between its explanation by its unseen model ``folds[n]`` and the explanation of
    sample ``partners[n]`` (e.g. :func:`shuffled_partners`) by each of the k − 1 other models, in
    :func:`pair_distances`' order of partners and with the same Spearman distance (spec §4.2). Explanations of
    different images by two models share only what every explanation of the method shares (a centred blob, the
    image border): S= distances at this level carry no information about the image.

    maps ``(k, N, *map_shape)``, folds ``(N,)``, partners ``(N,)`` integer indices into the N samples; distance and
    channel_dim as in :func:`pair_distances`. Ranks are computed ``batch_size`` samples at a time on the maps' device
    (an int or ``"auto"``, as in :func:`pair_distances`; the result does not depend on batch_size). Returns
    ``(N, k − 1)`` float: NaN where a map is constant or ``partners[n] == n`` (no other image to pair with).
    """
    _validate.one_device(maps=maps, folds=folds, partners=partners)
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
    batch_size = autobatch.map_chunk(batch_size, k * math.prod(maps.shape[2:]))
    dev = maps.device
    folds, partners = folds.to(dev).long(), partners.to(dev).long()
    others = torch.arange(k, device=dev).expand(n, k)
    others = others[others != folds[:, None]].view(n, k - 1)
    dist = torch.empty(n, k - 1, device=dev)
    _real_maps(maps, "maps")  # once, not per chunk: no host sync in the loop
    for b0 in range(0, n, batch_size):
        b1 = min(n, b0 + batch_size)
        rows = torch.arange(b0, b1, device=dev)
        unseen = rankdata(_flatten(maps[folds[b0:b1], rows], channel_dim).flatten(1))              # (b, d)
        shuffled = maps[others[b0:b1].T, partners[b0:b1][None, :]]                                # (k−1, b, ...)
        partner = rankdata(_flatten(shuffled, channel_dim).flatten(2)).transpose(0, 1)            # (b, k−1, d)
        dist[b0:b1] = _distance_from_ranks(unseen[:, None], partner, distance)
    dist[partners == torch.arange(n, device=dev)] = math.nan
    return dist


# ------------------------------------------------------------------------------------------------- ReCo and MeGe
def _sets(s_equal: torch.Tensor, s_unequal: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    _validate.one_device(s_equal=s_equal, s_unequal=s_unequal)  # before any value is read
    out = []
    for value, name in ((s_equal, "s_equal"), (s_unequal, "s_unequal")):
        _validate.tensor(value, name, ndim=1, floating=True)
        if value.numel() == 0:
            raise ValueError(f"{name} is empty: ReCo needs distances in both S= and S≠")
        if bool(torch.isnan(value).any()):
            raise ValueError(f"{name} holds NaN distances: drop them first (split_sets does)")
        _validate.finite(value, name)   # NaN is excluded above: this refuses ±inf
        out.append(value.double())
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
                                       batch_size: BatchSize = None) -> dict:
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
             distance: str, channel_dim: int | None, batch_size: BatchSize, maps_name: str = "maps") -> dict:
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
                               batch_size: BatchSize = None) -> dict[str, float]:
    """ReCo and MeGe of one explanation method on k cross-trained models whose predictions are at hand →
    ``{"reco": …, "mege": …}`` (higher is better for both; NaN when S≠ (ReCo) or S= (both) is empty). Arguments as
    in :func:`pair_distances`; see :func:`reco_mege_details_from_predictions`."""
    d = _details(maps, predictions, labels, folds, distance=distance, channel_dim=channel_dim, batch_size=batch_size)
    return {"reco": d["reco"], "mege": d["mege"]}


def predicted(model: Callable, x: torch.Tensor, batch_size: BatchSize) -> torch.Tensor:
    """The model's predicted class (argmax) of every clean sample → ``(B,)`` int64: the removal engine with nothing
    removed, ``batch_size`` inputs per forward call (``"auto"``: resolved by the engine for this model and the B
    inputs), with the engine's checks (model, x, NaN/inf logits)."""
    none = torch.zeros(x.shape[0], perturb.default_units(x).n, dtype=torch.bool, device=x.device)
    # output="predicted" does not read the target: a zero target only spares the engine a pass to predict one
    unread = torch.zeros(x.shape[0], dtype=torch.int64, device=x.device)
    return perturb.removal_outputs(model, x, none, output="predicted", target=unread, batch_size=batch_size)


def reco_mege_details(models: Sequence[Callable], x: torch.Tensor, attributions: torch.Tensor, *,
                      folds: torch.Tensor, labels: torch.Tensor, distance: str = "sqrt",
                      channel_dim: int | None = None, batch_size: BatchSize = None) -> dict:
    """Everything behind ReCo and MeGe for one explanation method over k cross-trained models (dataset level).

    models: the k ≥ 2 eval-mode models (e.g. ``fl.train.cross_train(...).models``); x: ``(B, ...)`` the samples
    (every model predicts every sample, ``batch_size`` inputs per forward call); attributions: ``(k, B,
    *map_shape)``, ``attributions[i]`` model i's maps of every sample (explaining the class model i predicts, spec
    §6.15); folds: ``(B,)`` the index of the model not trained on each sample (``cross_train(...).folds``); labels:
    ``(B,)`` the true labels (a pair goes to S= or S≠ by which models are right). distance and channel_dim as in
    :func:`pair_distances` (-3 for ``(C, H, W)`` maps: averaged over channels). batch_size: an int counts forward
    inputs for the predictions and samples for the ranks; ``"auto"`` sizes each by its own rule: the engine's timing
    probe per model (:mod:`faithlab.perturb.autobatch`) and :func:`pair_distances`' memory rule for the ranks. No
    result depends on it.

    Returns the dict of :func:`reco_mege_details_from_predictions` (the building block, for predictions already at
    hand) with ``predictions`` ``(k, B)`` int64 added. Higher ReCo and MeGe are better.
    """
    if not isinstance(models, (list, tuple)):
        raise TypeError(f"models must be a list or tuple of the k ≥ 2 cross-trained models, got "
                        f"{type(models).__name__}")
    for i, m in enumerate(models):
        _validate.model(m, f"models[{i}]")
    _validate.tensor(x, "x")
    _validate.one_device(x=x, attributions=attributions, labels=labels, folds=folds)
    for i, m in enumerate(models):
        _validate.model_device(m, x, f"models[{i}]")
    k, n = _check_maps(attributions, "attributions")
    if k != len(models) or x.ndim == 0 or n != x.shape[0]:
        raise ValueError(f"attributions must be (k, B, *map_shape) with k = {len(models)} models and B = "
                         f"{x.shape[0] if x.ndim else 0} samples of x, got shape {tuple(attributions.shape)}")
    _check_cross(attributions, None, labels, folds, "attributions")  # before the forward passes
    _validate.one_of(distance, "distance", DISTANCES)
    _map_channel_dim(channel_dim, attributions, "attributions")
    batch_size = _validate.batch_size(batch_size, "batch_size")  # "auto": resolved per model, then per map chunk
    predictions = torch.stack([predicted(m, x, batch_size) for m in models])
    d = _details(attributions, predictions, labels, folds, distance=distance, channel_dim=channel_dim,
                 batch_size=batch_size, maps_name="attributions")
    return {**d, "predictions": predictions}


def reco_mege(models: Sequence[Callable], x: torch.Tensor, attributions: torch.Tensor, *, folds: torch.Tensor,
              labels: torch.Tensor, distance: str = "sqrt", channel_dim: int | None = None,
              batch_size: BatchSize = None) -> dict[str, float]:
    """ReCo and MeGe of one explanation method over k cross-trained models → ``{"reco": …, "mege": …}`` (higher is
    better for both; NaN when S≠ (ReCo) or S= (both) is empty). Arguments as in :func:`reco_mege_details`."""
    d = reco_mege_details(models, x, attributions, folds=folds, labels=labels, distance=distance,
                          channel_dim=channel_dim, batch_size=batch_size)
    return {"reco": d["reco"], "mege": d["mege"]}


# ------------------------------------------------------------------------------------------- fl.evaluate
def _fold_predictions(c: Context) -> torch.Tensor:
    """Each fold model's predictions of every sample, once for every explainer, ``(k, B)``."""
    from faithlab.perturb.engine import NonFiniteOutput

    none = torch.zeros(c.x.shape[0], perturb.default_units(c.x).n, dtype=torch.bool, device=c.x.device)
    out = []
    for i, m in enumerate(c.kfold.models):
        _validate.model(m, f"kfold.models[{i}]")
        try:
            out.append(perturb.removal_outputs(c.counted(m), c.x, none, output="predicted", target=c.labels,
                                               batch_size=c.batch_size))
        except NonFiniteOutput as err:  # the engine knows the model as "model": name the fold model
            raise err.naming(f"kfold.models[{i}]") from None
    return torch.stack(out)


PREDICTIONS = Shared("reco_mege predictions", _fold_predictions)


def reco_mege_of_explainer(models: Sequence[Callable], x: torch.Tensor, explainer: Callable, *,
                           folds: torch.Tensor, labels: torch.Tensor, predictions: torch.Tensor | None = None,
                           name: str = "explainer", distance: str = "sqrt", channel_dim: int | None = None,
                           batch_size: BatchSize = None) -> dict:
    """ReCo and MeGe of an explainer over k cross-trained models, maps made here: each model's maps of every sample,
    ``explainer(models[i], inputs, ŷ_i)`` explaining the class model i predicts (spec §6.15), ``batch_size``
    samples per call, then :func:`reco_mege_details_from_predictions` (the dict it returns). What ``fl.evaluate``
    runs for its ``reco`` and ``mege`` rows, once per explainer.

    predictions: ``(k, B)`` the models' predictions when at hand (evaluate computes them once for every explainer);
    None: predicted here. name: the explainer's name in error messages. Maps that are not a tensor fitting their
    inputs, or hold NaN/inf (which would drop out of S= and S≠), raise an error naming the explainer, the model and
    the samples. Other arguments as in :func:`reco_mege_details`."""
    n = x.shape[0]
    # samples explained per call: the fold models' forward batch ("auto": the first model's best one)
    step = autobatch.resolve(batch_size, models[0], x, n)
    if predictions is None:
        predictions = torch.stack([predicted(m, x, batch_size) for m in models])
    stacks = [torch.cat([explained(name, explainer(m, x[c0:c0 + step], pred[c0:c0 + step]), x[c0:c0 + step],
                                   f"kfold.models[{i}]") for c0 in range(0, n, step)])
              for i, (m, pred) in enumerate(zip(models, predictions))]
    for i, maps_i in enumerate(stacks):
        if maps_i.is_floating_point() and not bool(torch.isfinite(maps_i).all()):
            bad = (~torch.isfinite(maps_i)).reshape(maps_i.shape[0], -1).any(dim=1).nonzero().flatten()[:8].tolist()
            raise ValueError(f"explainer {name!r} returned NaN or inf maps on kfold.models[{i}] for samples {bad}")
    return reco_mege_details_from_predictions(torch.stack(stacks), predictions, labels, folds.to(x.device),
                                              distance=distance, channel_dim=channel_dim, batch_size=step)


def _of_explainer(c: Context) -> dict:
    """ReCo and MeGe of the context's explainer (both read one run): :func:`reco_mege_of_explainer` with the fold
    models' shared predictions, its explained inputs counted."""
    def run() -> dict:
        out = reco_mege_of_explainer(c.kfold.models, c.x, c.explainer, folds=c.kfold.folds, labels=c.labels,
                                     predictions=c.inputs[PREDICTIONS.name], name=c.name, batch_size=c.batch_size)
        c.count_explained(len(c.kfold.models) * c.x.shape[0])
        return out
    return c.shared("reco_mege", run)


# ReCo and MeGe read one run of reco_mege_of_explainer per explainer (the function a user calls too)
register(Metric("reco", "ReCo", "reco_mege", True, details=reco_mege_of_explainer,
                compute=lambda c: _of_explainer(c)["reco"], group="reco_mege", level="dataset",
                needs=("kfold", "explainer"), uses={"predictions": PREDICTIONS.name},
                doc="do fold models' maps tell agreeing from disagreeing predictions apart?"),
         shared=(PREDICTIONS,))
register(Metric("mege", "MeGe", "reco_mege", True, details=reco_mege_of_explainer,
                compute=lambda c: _of_explainer(c)["mege"], group="reco_mege", level="dataset",
                needs=("kfold", "explainer"), uses={"predictions": PREDICTIONS.name}, ideal=1.0, span=1.0,
                doc="do fold models that are both right explain a sample alike?"))
