"""The study's metrics, each declared once on the contract of :mod:`faithlab.metrics.registry`.

Importing :mod:`faithlab.metrics` registers them, in the order ``fl.evaluate`` computes and lists them. Each
declaration says how ``fl.evaluate`` calls the metric's public function (one call shape,
``function(model, x, attributions, *, target=None, ...)``) and which options it reads; the options are declared once
below, with the checks ``fl.evaluate`` runs before any work.
"""

from __future__ import annotations

import inspect
import math

import torch

from faithlab import _validate, perturb
from faithlab.metrics import bhatt, consistency, crossfold, cumulative, ffidelity, fewclass, trace
from faithlab.metrics.registry import Context, Metric, Option, Shared, register
from faithlab.perturb import autobatch
from faithlab.perturb.engine import NonFiniteOutput

__all__ = ["SPARSITY", "BUILTIN", "OPTION_LIST", "SHARED", "explained", "takes_seeds_keyword"]

SPARSITY = tuple(round(0.1 * i, 1) for i in range(1, 10))
"""F-Fidelity's explanation sizes: Fid+ removes the top s, Fid− the bottom s, s = 0.1, …, 0.9."""


def _fractions(value, name, x):
    return _validate.fractions(value, name).tolist()


def _increasing(value, name, x):
    _validate.fractions(value, name, increasing=True)
    return value


def _open_fraction(value, name, x):
    _validate.fraction(value, name, closed_low=False)
    return value


def _positive(value, name, x):
    return _validate.positive_int(value, name)


def _radius(value, name, x):
    if not 0 < _validate.number(value, name) < math.inf:
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return value


def _seed(value, name, x):
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    return value


def _edge(value, name, x):
    return None if value is None else _validate.positive_int(value, name)


def _grid(value, name, x):
    try:
        fewclass.selection_cost((1, 1, 1, 1), grid=value)
    except (TypeError, ValueError) as exc:
        raise type(exc)(str(exc).replace("grid", name, 1)) from None
    return value


def _perturbed(value, name, x):
    if value is None:
        return None
    _validate.tensor(value, name, ndim=4)
    # one perturbed image per sample of the data, read by global sample index (x may be one batch of a stream)
    if value.shape[1:] != x.shape[1:] or value.shape[0] < x.shape[0]:
        raise ValueError(f"{name} must have x's shape {tuple(x.shape)} (one image per sample, indexed by the global "
                         f"sample index), got {tuple(value.shape)}")
    return value


REFERENCE = Option("reference", None, "None keeps each metric's own removal value (zero for F-Fidelity, μF and TRACE, "
                   "the per-channel mean for SaCo and the cumulative metrics); any ``perturb.Reference`` replaces it "
                   "for all of them (Few-class Fid keeps its perturbed images).")
SEED = Option("seed", 0, "every random draw (the same for every explainer: common random numbers)", _seed)
OPTION_LIST = (
    Option("sparsity", SPARSITY, "F-Fidelity's explanation sizes (the score is the mean over them)", _fractions),
    Option("alpha", 0.5, "RFid/FFid: the fraction α of the removal kept at random", _open_fraction),
    Option("beta", 0.1, "FFid: the cap β on the fraction removed", _open_fraction),
    Option("n_samples", 50, "RFid/FFid: Monte-Carlo masks per sample", _positive),
    Option("saco_k", 10, "SaCo: the number of salience groups", _positive),
    Option("edge", None, "TRACE: the patch grid edge (None: 7, 4 or 2, the first that divides the image side)",
           _edge),
    Option("fewclass_fractions", fewclass.FRACTIONS, "Few-class: the fractions of the MIF/LIF curves", _increasing),
    Option("normalisation", None, "Few-class: the (mean, std) x was normalised with; the candidate search then runs "
           "on pixel values"),
    Option("fewclass_grid", None, "Few-class: the candidate grid of the search (None: the 144 candidates of "
           "fewclass.QUICK_GRID; 'paper': the paper's 804; or (operation, σ, adjustment) entries)", _grid),
    Option("perturbed", None, "Few-class: the perturbed images (None: select_perturbation once for all maps)",
           _perturbed),
    Option("n_subsets", 200, "μF: random subsets of 15 % of the features", _positive),
    Option("n_neighbours", 50, "S_avg: neighbours per sample", _positive),
    Option("radius", 0.1, "S_avg: the neighbours' radius", _radius),
    REFERENCE, SEED,
)
_OPTIONS = {o.name: o for o in OPTION_LIST}


def _ref(c: Context) -> dict:
    return {} if c.options["reference"] is None else {"reference": c.options["reference"]}


def _select(c: Context):
    """Few-class's perturbed images of the chunk: the caller's, or one candidate search for all explainers."""
    given = c.options["perturbed"]
    if given is not None:
        if int(c.sample_index.max()) >= given.shape[0]:
            raise ValueError(f"perturbed holds {given.shape[0]} images but the data has sample "
                             f"{int(c.sample_index.max())}: pass one perturbed image per sample of the data")
        return given[c.sample_index.to(given.device)]
    return fewclass.select_perturbation(c.model, c.x, grid=c.options["fewclass_grid"],
                                        normalisation=c.options["normalisation"], batch_size=c.batch_size,
                                        progress=c.progress)["image"]


def _predictions(c: Context) -> torch.Tensor:
    """ReCo/MeGe: each fold model's predictions of every sample, once for every explainer, ``(k, B)``."""
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


SHARED = (Shared("fewclass selection", _select), Shared("reco_mege predictions", _predictions))


def explained(who: str, maps, inputs: torch.Tensor, where: str) -> torch.Tensor:
    """The explainer's maps of ``inputs``, detached, checked: a tensor of maps that fit the inputs (one per input,
    any layout ``perturb.check_attributions`` accepts), named by the explainer."""
    if not isinstance(maps, torch.Tensor):
        raise TypeError(f"explainer {who!r} must return a tensor of maps, got {type(maps).__name__} on {where}")
    try:
        perturb.check_attributions(maps, inputs)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"explainer {who!r} returned maps that do not fit its {inputs.shape[0]} inputs on {where} "
                        f"(shape {tuple(inputs.shape)}): {exc}") from None
    return maps.detach()


def takes_seeds_keyword(explainer) -> bool:
    """Whether the user's explainer has a ``seeds`` parameter that can be passed by keyword."""
    try:
        p = inspect.signature(explainer).parameters.get("seeds")
    except (TypeError, ValueError):  # no signature
        return False
    return p is not None and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)


def _fid(alpha: float | None, *, beta: bool = False):
    """Fid± (α = 1, no random draw), RFid± (α, N masks) or FFid± (also β): the keyword arguments."""
    def arguments(c: Context) -> dict:
        o = c.options
        kw = {"target": c.labels, "sparsity": o["sparsity"], "batch_size": c.batch_size, **_ref(c)}
        if alpha is not None:
            kw["alpha"] = alpha
            return kw
        kw.update(alpha=o["alpha"], n_samples=o["n_samples"], generator=o["seed"], sample_index=c.sample_index)
        if beta:
            kw["beta"] = o["beta"]
        return kw
    return arguments


def _mean_over_sizes(result: torch.Tensor) -> torch.Tensor:
    return result.mean(dim=1)


def _details_mean_over_sizes(details: dict) -> torch.Tensor:
    """RFid±/FFid±' score from their ``*_details`` twin: the mean over the sizes (the plain call's, bitwise)."""
    return _mean_over_sizes(details["score"])


def _key(name: str):
    def read(details: dict) -> torch.Tensor:
        return details[name]
    return read


# Monte-Carlo standard errors (the frame's ``mc_se``): a metric whose score is an average over random draws reads
# the SE its ``*_details`` twin computes from those draws (RFid±/FFid±: masks per size; μF: the jackknife over its
# subsets; S_avg: its neighbours). The others are not Monte-Carlo estimates and carry NaN: Fid± removes fixed sets;
# Few-class Fid draws one random tie order (it orders tied pixels only: one draw, not a mean over draws, so there is
# no spread to read, and re-drawing it would be extra forward passes); TRACE here follows the map's own trajectory
# (its random-order searches are searches for the best trajectory, not estimates of a mean, and evaluate runs none);
# SaCo, the cumulative curves and ReCo/MeGe draw nothing.
_MC_SE = _key("mean_mc_se")


def _morf(key: str):
    def compute(c: Context) -> torch.Tensor:
        d = c.shared("morf", lambda: cumulative.morf_details(c.model, c.x, c.attributions, target=c.target,
                                                             labels=c.labels, batch_size=c.batch_size, **_ref(c)))
        return d[key]
    return compute


def _trace_arguments(c: Context) -> dict:
    return {"target": c.target, "edge": c.options["edge"], "batch_size": c.batch_size, **_ref(c)}


def _trace(key: str):
    def compute(c: Context) -> torch.Tensor:
        d = c.shared("trace", lambda: trace.lerf_morf_details(c.model, c.x, c.attributions, **_trace_arguments(c)))
        return d[key]
    return compute


def _s_avg_arguments(c: Context) -> dict:
    user, who, fn = c.user_model, c.name, c.explainer

    if takes_seeds_keyword(fn):  # common random numbers: a sample and its neighbours share one seed
        def bound(_model, inputs: torch.Tensor, t: torch.Tensor, seeds: torch.Tensor) -> torch.Tensor:
            c.count_explained(inputs.shape[0])
            return explained(who, fn(user, inputs, t, seeds=seeds), inputs, "S_avg's inputs")
    else:  # the explainer cannot be given seeds: its own noise, if any, enters S_avg
        def bound(_model, inputs: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
            c.count_explained(inputs.shape[0])
            return explained(who, fn(user, inputs, t), inputs, "S_avg's inputs")

    o = c.options
    return {"explainer": bound, "target": c.target, "n_neighbours": o["n_neighbours"], "radius": o["radius"],
            "sample_index": c.sample_index, "generator": o["seed"], "batch_size": c.batch_size}


def _reco_mege(key: str):
    def compute(c: Context) -> float:
        def details():
            who, fn, x, n = c.name, c.explainer, c.x, c.x.shape[0]
            # samples explained per call: the fold models' forward batch ("auto": the first model's best one)
            step = autobatch.resolve(c.batch_size, c.kfold.models[0], x, n)
            predictions = c.inputs["reco_mege predictions"]
            stacks = [torch.cat([explained(who, fn(m, x[c0:c0 + step], pred[c0:c0 + step]), x[c0:c0 + step],
                                           f"kfold.models[{i}]") for c0 in range(0, n, step)])
                      for i, (m, pred) in enumerate(zip(c.kfold.models, predictions))]
            for i, maps_i in enumerate(stacks):  # NaN maps would drop out of S= and S≠: a NaN score
                if maps_i.is_floating_point() and not bool(torch.isfinite(maps_i).all()):
                    bad = (~torch.isfinite(maps_i)).reshape(maps_i.shape[0], -1).any(dim=1)
                    bad = bad.nonzero().flatten()[:8].tolist()
                    raise ValueError(f"explainer {who!r} returned NaN or inf maps on kfold.models[{i}] for samples "
                                     f"{bad}")
            c.count_explained(len(stacks) * n)
            return crossfold.reco_mege_details_from_predictions(
                torch.stack(stacks), predictions, c.labels, c.kfold.folds.to(x.device), batch_size=step)
        return c.shared("reco_mege", details)[key]
    return compute


def _saco_check(options: dict, x: torch.Tensor) -> None:
    # the metric's own check would name its argument k: name ours
    if options["saco_k"] > (units := perturb.default_units(x).n):
        raise ValueError(f"saco_k must be at most the number of units of x ({units}), got {options['saco_k']}")


def _trace_check(options: dict, x: torch.Tensor) -> None:
    trace.patch_grid(x, trace.default_edge(x, options["edge"]))  # the edge must divide the side: before any work


_FID = ("sparsity", "reference")
_RFID = (*_FID, "alpha", "n_samples", "seed")
_M = Metric
BUILTIN = (
    _M("fid+", "Fid+", "ffidelity", True, ffidelity.fid_plus, _fid(1.0), _mean_over_sizes, group="fid", options=_FID),
    _M("fid-", "Fid−", "ffidelity", False, ffidelity.fid_minus, _fid(1.0), _mean_over_sizes, group="fid",
       options=_FID),
    _M("rfid+", "RFid+", "ffidelity", True, ffidelity.fid_plus_details, _fid(None), _details_mean_over_sizes,
       group="rfid", options=_RFID, mc_se=_MC_SE),
    _M("rfid-", "RFid−", "ffidelity", False, ffidelity.fid_minus_details, _fid(None), _details_mean_over_sizes,
       group="rfid", options=_RFID, mc_se=_MC_SE),
    _M("ffid+", "FFid+", "ffidelity", True, ffidelity.fid_plus_details, _fid(None, beta=True),
       _details_mean_over_sizes, group="ffid", needs=("finetuned",), options=(*_RFID, "beta"), model="finetuned",
       mc_se=_MC_SE),
    _M("ffid-", "FFid−", "ffidelity", False, ffidelity.fid_minus_details, _fid(None, beta=True),
       _details_mean_over_sizes, group="ffid", needs=("finetuned",), options=(*_RFID, "beta"), model="finetuned",
       mc_se=_MC_SE),
    _M("fewclass_fid", "Few-class Fid", "fewclass", True, fewclass.fewclass_fid,
       lambda c: {"perturbed": c.inputs["fewclass selection"], "target": c.target, "generator": c.options["seed"],
                  "sample_index": c.sample_index, "fractions": c.options["fewclass_fractions"],
                  "batch_size": c.batch_size},
       group="fewclass", needs=("images",),
       options=("fewclass_fractions", "fewclass_grid", "normalisation", "perturbed", "seed"),
       uses=("fewclass selection",), ideal=1.0, span=1.0),
    _M("saco", "SaCo", "saco", True, consistency.saco,
       lambda c: {"k": c.options["saco_k"], "target": c.target, "batch_size": c.batch_size, **_ref(c)},
       options=("saco_k", "reference"), check=_saco_check, ideal=1.0, span=2.0),
    _M("auc_accuracy", "AUC", "saco", False, cumulative.auc_accuracy,
       lambda c: {"target": c.labels, "batch_size": c.batch_size, **_ref(c)}, compute=_morf("auc_accuracy"),
       group="morf", options=("reference",)),
    _M("aopc", "AOPC", "saco", True, cumulative.aopc,
       lambda c: {"target": c.target, "batch_size": c.batch_size, **_ref(c)}, compute=_morf("aopc"), group="morf",
       options=("reference",)),
    _M("log_odds", "LOdds", "saco", False, cumulative.log_odds,
       lambda c: {"target": c.target, "batch_size": c.batch_size, **_ref(c)}, compute=_morf("log_odds"),
       group="morf", options=("reference",)),
    _M("comprehensiveness", "Comprehensiveness", "saco", False, cumulative.comprehensiveness,
       lambda c: {"target": c.target, "batch_size": c.batch_size, **_ref(c)}, group="lerf", options=("reference",)),
    _M("mu_fidelity", "μF", "reco_mege", True, bhatt.mu_fidelity_details,
       lambda c: {"target": c.target, "n_subsets": c.options["n_subsets"], "generator": c.options["seed"],
                  "sample_index": c.sample_index, "batch_size": c.batch_size, **_ref(c)},
       _key("mu_f"), options=("n_subsets", "seed", "reference"), ideal=1.0, span=2.0, mc_se=_key("mc_se")),
    # S_avg maps x itself: under common random numbers x's map shares its neighbours' seed, which the given maps
    # (drawn with other noise by a stochastic explainer) do not
    _M("s_avg", "S_avg", "reco_mege", False, bhatt.average_stability_details, _s_avg_arguments, _key("s_avg"),
       needs=("explainer",), options=("n_neighbours", "radius", "seed"), maps=False, ideal=0.0,
       mc_se=_key("mc_se")),
    _M("lerf", "ΣLeRF", "trace", True, trace.lerf_morf_details, _trace_arguments, lambda d: d["lerf_auc"],
       compute=_trace("lerf_auc"), group="trace", needs=("images",), options=("edge", "reference"),
       check=_trace_check),
    _M("morf", "ΣMoRF", "trace", False, trace.lerf_morf_details, _trace_arguments, lambda d: d["morf_auc"],
       compute=_trace("morf_auc"), group="trace", needs=("images",), options=("edge", "reference"),
       check=_trace_check),
    _M("le-mo", "ΣLeRF − ΣMoRF", "trace", True, trace.lerf_morf, _trace_arguments, compute=_trace("lerf_morf"),
       group="trace", needs=("images",), options=("edge", "reference"), check=_trace_check),
    _M("reco", "ReCo", "reco_mege", True, compute=_reco_mege("reco"), group="reco_mege", level="dataset",
       needs=("kfold", "explainer"), uses=("reco_mege predictions",)),
    _M("mege", "MeGe", "reco_mege", True, compute=_reco_mege("mege"), group="reco_mege", level="dataset",
       needs=("kfold", "explainer"), uses=("reco_mege predictions",), ideal=1.0, span=1.0),
)

for _i, _metric in enumerate(BUILTIN):
    register(_metric, options=OPTION_LIST if _i == 0 else (), shared=SHARED if _i == 0 else ())
del _i, _metric, _M
