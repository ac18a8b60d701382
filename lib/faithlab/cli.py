"""The ``faithlab`` command: ``faithlab evaluate`` scores explainers of your model on your images with every
faithfulness metric of the study and writes a report (tables, map figures, one HTML page).

::

    faithlab evaluate --model torchvision:resnet18 --weights my.pt --images my_images/ --out report/

Before any real work it shows the images, the model's preprocessing and the cost of each metric (model inputs
counted exactly by :func:`faithlab.evaluation.estimate`, seconds from a timed forward pass of the model on one
batch), naming the metrics that are expensive at this image size; ``--estimate-only`` stops there. Then
:func:`faithlab.evaluate` streams the images through every metric under a progress bar, a randomised copy of the
model gives the sanity check of :func:`faithlab.report.sanity`, and :func:`faithlab.report.write` writes the
report. Usage errors (a flag's value that cannot work) print one line naming the flag and its fix and exit with
status 2, without a traceback.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

__all__ = ["main", "UsageError", "parse_explainers", "parse_settings"]

DEFAULT_EXPLAINERS = "saliency,integrated_gradients,gradcam"
KFOLD_METRICS = ("reco", "mege")
TIPS = {"fewclass selection": "its search over candidate blurs runs once for all explainers; fewer curve points: "
                              "--set fewclass_fractions=[0,0.25,0.5,0.75,1]",
        "fewclass": "fewer curve points: --set fewclass_fractions=[0,0.25,0.5,0.75,1]",
        "rfid": "fewer Monte-Carlo masks: --set n_samples=10",
        "ffid": "fewer Monte-Carlo masks: --set n_samples=10",
        "mu_fidelity": "fewer random subsets: --set n_subsets=50",
        "s_avg": "fewer neighbours: --set n_neighbours=10",
        "trace": "a coarser patch grid: --set edge=4",
        "fid": "fewer explanation sizes: --set sparsity=[0.1,0.5,0.9]",
        "saco": "fewer groups: --set saco_k=5"}
"""How to make each metric group cheaper, shown beside the groups the estimate calls expensive."""


class UsageError(Exception):
    """A command-line value that cannot work: ``flag`` names it, the message says why and how to fix it."""

    def __init__(self, flag: str, message: str):
        super().__init__(f"{flag}: {message}")
        self.flag = flag


def _parse_value(text: str):
    """A JSON or Python literal (``16``, ``0.5``, ``.5``, ``[0, 0.5, 1]``, ``null``, ``None``, ``true``), else the
    text itself (``zero``) → the Python value. No YAML: the command runs on the slim install, without pyyaml."""
    import ast

    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def parse_explainers(spec: str) -> dict[str, tuple[str, dict]]:
    """``--explainers``: a comma-separated list of method names of :func:`faithlab.explainers.explain`, each with
    options after colons (``"integrated_gradients:n_steps=16:internal_batch_size=8,saliency"``), or a YAML/JSON
    file mapping display names to a method name or ``[method, {options}]`` → ``{name: (method, options)}``. Raises
    :class:`UsageError` naming ``--explainers`` for an unknown method or a malformed entry."""
    from faithlab import explainers as ex

    known = ex.available()
    path = Path(spec).expanduser()
    entries: dict[str, tuple[str, dict]] = {}
    if spec.endswith((".yaml", ".yml", ".json")):
        if not path.is_file():
            raise UsageError("--explainers", f"no such file {spec}")
        if spec.endswith(".json"):
            load, errors = json.loads, (ValueError,)
        else:
            from faithlab._optional import require

            yaml = require("yaml", "--explainers <file>.yaml (or give a .json file)")
            load, errors = yaml.safe_load, (yaml.YAMLError,)
        try:
            loaded = load(path.read_text(encoding="utf-8"))
        except errors as err:
            raise UsageError("--explainers", f"{spec} is not valid {'JSON' if spec.endswith('.json') else 'YAML'}: "
                                             f"{err}") from None
        if not isinstance(loaded, dict) or not loaded:
            raise UsageError("--explainers", f"{spec} must map display names to a method or [method, {{options}}]")
        for name, value in loaded.items():
            method, options = (value, {}) if isinstance(value, str) else (tuple(value) + ({},))[:2] \
                if isinstance(value, (list, tuple)) and value else (None, None)
            if not isinstance(method, str) or not isinstance(options, dict):
                raise UsageError("--explainers", f"{spec}: entry {name!r} must be a method name or [method, "
                                                 f"{{options}}], got {value!r}")
            entries[str(name)] = (method, dict(options))
    else:
        for part in (p.strip() for p in spec.split(",")):
            if not part:
                continue
            method, *opts = part.split(":")
            options = {}
            for o in opts:
                key, eq, value = o.partition("=")
                if not eq or not key.strip():
                    raise UsageError("--explainers", f"option {o!r} of {method!r} must be key=value (e.g. "
                                                     "integrated_gradients:n_steps=16)")
                options[key.strip()] = _parse_value(value.strip())
            name = method.strip() if method.strip() not in entries else part
            entries[name] = (method.strip(), options)
    if not entries:
        raise UsageError("--explainers", "names no explainer; e.g. --explainers saliency,gradcam")
    for name, (method, _) in entries.items():
        if method not in known:
            raise UsageError("--explainers", f"unknown method {method!r}; known: {', '.join(known)}")
    return entries


def parse_settings(items: Sequence[str]) -> dict:
    """``--set option=value`` (repeatable; values read as YAML) → ``{option: value}`` for :func:`faithlab.evaluate`.
    Raises :class:`UsageError` naming ``--set`` for an unknown option or one that cannot be given on the command
    line."""
    from faithlab.metrics.registry import OPTIONS

    settable = [o for o in OPTIONS if o not in ("perturbed", "reference", "normalisation")]
    out = {}
    for item in items:
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or not key:
            raise UsageError("--set", f"{item!r} must be option=value, e.g. --set n_samples=10")
        if key not in settable:
            raise UsageError("--set", f"unknown option {key!r}; options: {', '.join(settable)}")
        out[key] = _parse_value(value.strip())
    return out


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="faithlab", description="faithlab: faithfulness metrics of post-hoc explanations.",
        epilog="Run 'faithlab evaluate --help' for the report on your own model and images. The study's notebooks "
               "run with 'python -m faithlab.study'.")
    sub = parser.add_subparsers(dest="command", metavar="command")
    ev = sub.add_parser(
        "evaluate", formatter_class=argparse.RawDescriptionHelpFormatter,
        help="score explainers of your model on your images with every metric and write a report",
        description="Score explainers of your model on a folder of images with every faithfulness metric of the "
                    "study and write a report: report.csv (one row per image × explainer × metric), summary.csv, "
                    "ranks.csv, sanity.csv, cost.csv, map figures and index.html.\n\nFirst the images, the model's "
                    "preprocessing and the cost of each metric are shown (model inputs, and seconds from a timed "
                    "forward pass on one batch); metrics that are expensive at this image size are named with the "
                    "--set option that makes them cheaper.",
        epilog="examples:\n"
               "  faithlab evaluate --model torchvision:resnet18 --weights my.pt --images my_images/ --out report/\n"
               "  faithlab evaluate --model timm:vit_tiny_patch16_224 --weights vit.pt --images imgs/ \\\n"
               "      --explainers 'attention_gradcam,rollout,random' --n-images 16 --estimate-only\n"
               "  faithlab evaluate ... --explainers 'integrated_gradients:n_steps=16,saliency' --set n_samples=10\n\n"
               "ReCo and MeGe need k models cross-trained on labelled data and are not computed here (use the "
               "template notebook templates/evaluate_your_explainer with kfold, or fl.train.cross_train and "
               "fl.evaluate(..., kfold=)). FFid+/- need a copy of the model fine-tuned with random removal: "
               "pass its weights with --finetuned.")
    g = ev.add_argument_group("model and images")
    g.add_argument("--model", required=True, metavar="SPEC",
                   help="torchvision:<name> (e.g. torchvision:resnet18), timm:<name>, or a faithlab zoo name")
    g.add_argument("--weights", metavar="FILE", help="the model's state dict (torch.save(model.state_dict(), FILE) "
                   "or safetensors; read weights-only); the number of classes is read from it")
    g.add_argument("--finetuned", metavar="FILE", help="weights of a copy of the model fine-tuned with random "
                   "removal (F-Fidelity): adds FFid+ and FFid-")
    g.add_argument("--images", required=True, metavar="DIR", help="a folder of images: flat, or one subfolder per "
                   "class")
    g.add_argument("--labels", default="folders", metavar="folders|predictions|CSV",
                   help="labels: 'folders' (subfolder names, sorted, are classes 0, 1, ...; a flat folder has none), "
                        "a CSV file with columns file,label, or 'predictions' (the model's own); without labels Fid+/- "
                        "and the accuracy AUC read the model's predictions (default: %(default)s)")
    g.add_argument("--n-images", type=int, metavar="N", help="evaluate the first N images (sorted by path; default: "
                   "all)")
    g.add_argument("--size", type=int, metavar="PX", help="resize and crop the images to PX pixels instead of the "
                   "model's own preprocessing size (faster; the model must accept that size)")
    g = ev.add_argument_group("explainers and metrics")
    g.add_argument("--explainers", default=DEFAULT_EXPLAINERS, metavar="LIST|FILE",
                   help="methods of fl.explainers.explain, comma-separated, options after colons "
                        "('integrated_gradients:n_steps=16,saliency'), or a YAML/JSON file {name: [method, "
                        "{options}]}; add 'random' for the beats-a-random-map check (default: %(default)s)")
    g.add_argument("--metrics", metavar="LIST", help="comma-separated metric names (default: every metric these "
                   "inputs allow; 'faithlab evaluate --list-metrics' lists them)")
    g.add_argument("--list-metrics", action="store_true", help="list the metrics and their options, then exit")
    g.add_argument("--set", action="append", default=[], metavar="OPTION=VALUE", dest="settings",
                   help="a metric option of fl.evaluate (repeatable; values as YAML): e.g. --set n_samples=10 "
                        "--set fewclass_fractions=[0,0.5,1]")
    g.add_argument("--seed", type=int, default=0, help="every random draw (default: %(default)s)")
    g.add_argument("--no-sanity", action="store_true", help="skip the randomised-model sanity check (it evaluates "
                   "the model-only metrics a second time)")
    g.add_argument("--randomise-scale", type=float, default=10.0, metavar="S", help="the sanity check's randomised "
                   "model: weights plus noise of S x their std (default: %(default)s)")
    g = ev.add_argument_group("run")
    g.add_argument("--device", default="cpu", help="torch device, e.g. cpu, cuda, cuda:1 (default: %(default)s)")
    g.add_argument("--batch-size", type=int, default=64, metavar="N", help="images per batch (default: %(default)s)")
    g.add_argument("--maps", type=int, default=4, metavar="N", help="map figures for the first N images (default: "
                   "%(default)s)")
    g.add_argument("--out", default="report", metavar="DIR", help="the report folder, replaced when complete "
                   "(default: %(default)s)")
    g.add_argument("--yes", "-y", action="store_true", help="do not ask before running (asked only when the "
                   "input is a terminal)")
    g.add_argument("--estimate-only", action="store_true", help="show the images, preprocessing and cost "
                   "estimate, then exit")
    return parser


def _explainer_fn(method: str, options: dict, seed: int, batch_size: int):
    """``callable(model, inputs, target)`` computing ``method``'s maps (detached). A random method draws from
    ``seed``, or from the per-sample ``seeds`` :func:`faithlab.evaluate` passes when it maps the batches (its maps
    then do not depend on the batches)."""
    from faithlab import explainers

    if not explainers.is_random(method):
        def explain(model, inputs, target):
            return explainers.explain(model, inputs, target, method=method, batch_size=batch_size,
                                      **options).detach()
    else:
        def explain(model, inputs, target, seeds=None):
            draws = {"generator": seed} if seeds is None else {"sample_seeds": seeds}
            return explainers.explain(model, inputs, target, method=method, batch_size=batch_size, **draws,
                                      **options).detach()

    explain.__name__ = method
    return explain


def _choose_metrics(text: str | None, *, finetuned: bool) -> list[str]:
    from faithlab.evaluation import METRICS

    if text is None:
        return [m for m, i in METRICS.items() if i.level == "sample" and ("finetuned" not in i.needs or finetuned)]
    chosen = [m.strip() for m in text.split(",") if m.strip()]
    for m in chosen:
        if m not in METRICS:
            raise UsageError("--metrics", f"unknown metric {m!r}; known: {', '.join(METRICS)}")
        if m in KFOLD_METRICS:
            raise UsageError("--metrics", f"{m!r} needs k models cross-trained on folds of labelled training data, "
                                          "which this command does not train: run the template notebook "
                                          "templates/evaluate_your_explainer with kfold=5, or cross-train with "
                                          "fl.train.cross_train and call fl.evaluate(..., kfold=...)")
        if "finetuned" in METRICS[m].needs and not finetuned:
            raise UsageError("--metrics", f"{m!r} needs a copy of the model fine-tuned with random removal: pass its "
                                          "weights with --finetuned FILE")
    if not chosen:
        raise UsageError("--metrics", "names no metric")
    return chosen


def _labels(value: str):
    """``--labels`` → the ``labels`` of :func:`faithlab.data.image_folder`."""
    if value in ("folders", "predictions"):
        return "folders" if value == "folders" else None
    path = Path(value).expanduser()
    if not path.is_file():
        raise UsageError("--labels", f"no such file {value}; give 'folders', 'predictions' or a CSV file (file,label)")
    return path


def _inputs(batch):
    """The images of one batch of a loader: ``x``, ``(x, y)`` or ``{"x": ...}``."""
    return batch[0] if isinstance(batch, (tuple, list)) else batch["x"] if isinstance(batch, dict) else batch


class _first:
    """The batches of ``loader`` up to its first ``n`` samples (the last batch cut), as a re-iterable."""

    def __init__(self, loader, n: int):
        self.loader, self.n = loader, n

    def __iter__(self):
        left = self.n
        for batch in self.loader:
            if left <= 0:
                return
            b = _inputs(batch).shape[0]
            if b > left:
                cut = slice(0, left)
                batch = (type(batch)(v[cut] for v in batch) if isinstance(batch, (tuple, list)) else
                         {k: v[cut] for k, v in batch.items()} if isinstance(batch, dict) else batch[cut])
            left -= min(b, left)
            yield batch


def _resized(pre, size: int):
    """The preprocessing ``pre`` resizing the shorter side to ``size`` pixels and centre-cropping ``size`` × ``size``
    (``--size``)."""
    import dataclasses

    return dataclasses.replace(pre, resize=size, crop=(size, size))


def _load(args, echo):
    """The model, its preprocessing, the image folder and the fine-tuned copy, or UsageError naming the flag."""
    import torch

    import faithlab as fl

    for flag, value in (("--weights", args.weights), ("--finetuned", args.finetuned)):
        if value is not None and not Path(value).expanduser().is_file():
            raise UsageError(flag, f"no such file {value}")
    try:
        model = fl.models.load(args.model, weights=args.weights)
    except FileNotFoundError as err:
        raise UsageError("--weights", str(err)) from None
    except (ValueError, TypeError, KeyError, RuntimeError, ImportError) as err:
        raise UsageError("--model/--weights", f"{args.model}: {err}") from None
    tuned = None
    if args.finetuned is not None:
        try:
            tuned = fl.models.load(args.model, weights=args.finetuned)
        except (ValueError, TypeError, KeyError, RuntimeError, ImportError) as err:
            raise UsageError("--finetuned", str(err)) from None
    try:
        device = torch.device(args.device)
        model = model.to(device).eval()
        tuned = tuned.to(device).eval() if tuned is not None else None
    except (RuntimeError, AssertionError) as err:
        raise UsageError("--device", f"{args.device}: {err}") from None
    pre = fl.models.preprocessing(model)
    if args.size is not None:
        if args.size < 8:
            raise UsageError("--size", f"must be at least 8 pixels, got {args.size}")
        pre = _resized(pre, args.size)
    images = Path(args.images).expanduser()
    if not images.is_dir():
        raise UsageError("--images", f"{args.images} is not a folder")
    try:
        data = fl.data.image_folder(images, preprocess=pre, labels=_labels(args.labels))
    except (ValueError, FileNotFoundError, TypeError) as err:
        raise UsageError("--labels" if str(err).startswith("labels") else "--images", str(err)) from None
    if len(data) == 0:
        raise UsageError("--images", f"{args.images} holds no image (png, jpg, jpeg, bmp, webp, tif)")
    return model, tuned, pre, data, device


def _probe(model, x, explain: dict, echo) -> tuple[float, dict[str, float]]:
    """Seconds per model input (one timed forward pass on ``x`` after a warm-up) and per explained image of each
    explainer (one call on up to 4 images)."""
    import torch

    with torch.no_grad():
        model(x[:1])
        start = time.perf_counter()
        target = model(x).argmax(1)
        per_input = (time.perf_counter() - start) / x.shape[0]
    per_map = {}
    for name, fn in explain.items():
        start = time.perf_counter()
        fn(model, x[:4], target[:4])
        per_map[name] = (time.perf_counter() - start) / min(4, x.shape[0])
    return per_input, per_map


def _estimate(args, model, data, n: int, chosen: list[str], explain: dict, options: dict, tuned, echo):
    """Print the cost table (per metric group: model inputs and seconds) and the expensive groups; return the
    estimated seconds."""
    import pandas as pd
    import torch

    from faithlab import evaluation

    xb = _inputs(next(iter(_first(data.loader(args.batch_size), n)))).to(next(model.parameters()).device)
    with torch.no_grad():
        n_classes = int(model(xb[:1]).shape[1])
    per_input, per_map = _probe(model, xb, explain, echo)
    table = evaluation.estimate((n, *xb.shape[1:]), n_classes=n_classes, explainers=list(explain), metrics=chosen,
                                finetuned=tuned is not None, explainer=True, batch_size=args.batch_size, **options)
    by_group = table.groupby("group", sort=False).agg(metrics=("metrics", "first"),
                                                      forward_inputs=("forward_inputs", "sum"),
                                                      explained_inputs=("explained_inputs", "sum"))
    mean_map = sum(per_map.values()) / len(per_map)
    by_group["seconds"] = by_group["forward_inputs"] * per_input + by_group["explained_inputs"] * mean_map
    by_group["per image"] = by_group["forward_inputs"] / n
    by_group["explained per image"] = by_group["explained_inputs"] / n
    maps_seconds = n * sum(per_map.values())
    total = float(by_group["seconds"].sum()) + maps_seconds
    shown = by_group.reset_index()[["group", "metrics", "per image", "explained per image", "seconds"]]
    shown = shown.rename(columns={"per image": "model inputs per image", "seconds": "est. seconds"})
    with pd.option_context("display.width", 160, "display.max_colwidth", 60):
        echo(shown.round(1).to_string(index=False))
    echo("(per image: summed over the explainers; explained: inputs given to an explainer, e.g. S_avg's neighbours)")
    echo(f"maps: {len(explain)} explainer(s) x {n} images, est. {maps_seconds:.0f} s; model: {1000 * per_input:.2f} "
         f"ms per input on {args.device} (timed on one batch of {xb.shape[0]})")
    expensive = by_group[(by_group["seconds"] > 0.2 * total) & (by_group["seconds"] > 10)]
    for group, row in expensive.iterrows():
        tip = TIPS.get(group, "")
        work = (f"{row['per image']:.0f} model inputs" if row["per image"] else
                f"{row['explained per image']:.0f} explained inputs")
        echo(f"expensive at {tuple(xb.shape[1:])}: {row['metrics'] or group} (~{row['seconds']:.0f} s, {work} per "
             f"image){'; ' + tip if tip else ''}")
    echo(f"estimated total: {total:.0f} s ({total / 60:.1f} min) for {n} images"
         + ("" if args.no_sanity else ", plus the sanity check (the model-only metrics once more)"))
    return total


def _evaluate(args, argv: Sequence[str], echo) -> int:
    import torch

    import faithlab as fl
    from faithlab import report

    for flag, value in (("--batch-size", args.batch_size), ("--n-images", args.n_images)):
        if value is not None and value < 1:
            raise UsageError(flag, f"must be a positive integer, got {value}")
    if args.maps < 0:
        raise UsageError("--maps", f"must be a non-negative integer, got {args.maps}")
    chosen_explainers = parse_explainers(args.explainers)
    options = parse_settings(args.settings)
    chosen = _choose_metrics(args.metrics, finetuned=args.finetuned is not None)
    model, tuned, pre, data, device = _load(args, echo)
    n = len(data) if args.n_images is None else min(args.n_images, len(data))
    labels = "the image folders" if data.labelled else "the model's predictions"
    echo(f"images: {n} from {args.images} ({len(data.classes) if data.labelled else 'no'} classes; labels from "
         f"{labels})")
    echo(f"model: {args.model}{' with ' + args.weights if args.weights else ' (random weights)'}")
    echo(f"preprocessing: {pre}")
    explain = {name: _explainer_fn(method, opts, args.seed, args.batch_size)
               for name, (method, opts) in chosen_explainers.items()}
    options = {"seed": args.seed, **options}
    if "fewclass_fid" in chosen and getattr(pre, "normalisation", None) is not None:
        options["normalisation"] = pre.normalisation
    try:
        from faithlab.metrics import registry

        first = _inputs(next(iter(data.loader(1))))  # the options are checked against the real image shape
        registry.check_options(options, chosen, torch.zeros(1, *first.shape[1:]))
    except (ValueError, TypeError) as err:
        raise UsageError("--set", str(err)) from None
    _estimate(args, model, data, n, chosen, explain, options, tuned, echo)
    if args.estimate_only:
        return 0
    if not args.yes and sys.stdin is not None and sys.stdin.isatty():
        answer = input("Proceed? [y/N] ").strip().lower()
        if answer not in ("y", "yes"):
            echo("stopped before running (pass --yes to skip this question)")
            return 1
    hints = []
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frame = fl.evaluate(model, _first(data.loader(args.batch_size), n), explainer=explain, metrics=chosen,
                            finetuned=tuned, batch_size=args.batch_size, progress=True, **options)
        randomised = None
        random = next((name for name, (m, _) in chosen_explainers.items() if m == "random"), None)
        if not args.no_sanity and report.randomisable_metrics(frame):
            echo("sanity check: the model-only metrics on a randomised copy of the model")
            randomised = report.on_randomised(model, _first(data.loader(args.batch_size), n), None, explain, frame,
                                              scale=args.randomise_scale, generator=args.seed,
                                              batch_size=args.batch_size, progress=True, **options)
    for w in caught:
        message = f"{w.category.__name__}: {w.message}"
        if message not in hints:
            hints.append(message)
            echo(f"warning: {message}")
    if random is None:
        hints.append("No random map among the explainers: add 'random' to --explainers for the check that each "
                     "explainer beats a random map.")
    if not data.labelled:
        hints.append("No labels: Fid+/- and the accuracy AUC read agreement with the model's own predictions.")
    hints.append("ReCo and MeGe are not computed: they need k models cross-trained on labelled data (the template "
                 "notebook's kfold).")
    xs, maps = None, None
    if args.maps:
        xs = data.tensors(min(args.maps, n), model=model).x.to(device)
        with torch.no_grad():
            target = model(xs).argmax(1)
        maps = {name: fn(model, xs, target) for name, fn in explain.items()}
    parameters = {k: v for k, v in vars(args).items() if k not in ("command", "list_metrics")}
    parameters["settings"] = options
    index = report.write(args.out, frame, randomised=randomised, random=random, images=xs, maps=maps,
                         n_maps=args.maps, normalisation=getattr(pre, "normalisation", None),
                         command="faithlab " + shlex.join(argv), parameters=parameters, hints=hints)
    echo(f"done in {time.perf_counter() - start:.0f} s: {index}")
    return 0


def _list_metrics(echo) -> int:
    import pandas as pd

    from faithlab import evaluation

    table = evaluation.describe()[["metric", "label", "paper", "direction", "needs", "options"]]
    with pd.option_context("display.width", 200, "display.max_colwidth", 90):
        echo(table.to_string(index=False))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``faithlab`` command with ``argv`` (None: ``sys.argv[1:]``) → the exit status: 0 done, 1 stopped or
    failed, 2 a usage error (printed as one line naming the flag, no traceback)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    if "--list-metrics" in argv and argv[:1] == ["evaluate"]:
        return _list_metrics(print)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse printed the usage error (or the help)
        return int(exc.code or 0)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return _evaluate(args, argv, lambda text: print(text, flush=True))
    except UsageError as err:
        print(f"faithlab {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("faithlab: interrupted; the report folder was not changed", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
