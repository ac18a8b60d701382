"""The ``faithlab`` command: ``faithlab evaluate`` scores explainers of your model on your images with every
faithfulness metric of the study and writes a report (tables, map figures, one HTML page).

::

    faithlab evaluate --model torchvision:resnet18 --weights my.pt --images my_images/ --out report/

Before any real work it shows the images, the model's preprocessing and the cost of each metric (model inputs
counted exactly by :func:`faithlab.evaluation.estimate`, seconds from the median of three warm forward passes at
``--batch-size`` and one warm call of each explainer), naming the metrics that are expensive at this image size;
``--estimate-only`` stops there. The report's ``estimate.csv`` and ``cost.csv`` set the estimate beside the
measured seconds per metric group. A run interrupted with Ctrl-C keeps its finished chunks in ``<out>.partial/``;
``--resume`` continues from them. One run at a time writes to an ``--out`` folder: it holds an OS lock on
``.<out>.lock`` beside it, and a second run on the same folder stops at once, naming the first. Then
:func:`faithlab.evaluate` streams the images through every metric under a progress bar, a randomised copy of the
model gives the sanity check of :func:`faithlab.report.sanity`, and :func:`faithlab.report.write` writes the
report. Usage errors (a flag's value that cannot work) print one line naming the flag and its fix and exit with
status 2, without a traceback.

One concept: the ``faithlab`` command line, from its flags to a written report (parsing, loading the model and
images, the estimate, the streamed evaluation and its resume); the rules it applies live in the library.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

from faithlab._pixels import MAX_PIXELS  # numpy only: the command's start stays light

__all__ = ["main", "UsageError", "parse_explainers", "parse_settings"]

DEFAULT_EXPLAINERS = "saliency,integrated_gradients,gradcam"


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
    from faithlab.metrics import registry

    fixed = ("perturbed", "reference", "normalisation")  # tensors or a dataset's statistics: Python only
    settable = [o for o in registry.OPTIONS if o not in fixed]
    out = {}
    for item in items:
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or not key:
            raise UsageError("--set", f"{item!r} must be option=value, e.g. --set n_samples=10")
        scoped = registry._scoped_name(key)  # <group>_<keyword>: that group's metrics only
        if key not in settable and (scoped is None or scoped[1] in fixed):
            raise UsageError("--set", f"unknown option {key!r}; options: {', '.join(settable)} (or "
                                      "<group>_<option> for one group's metrics, e.g. fewclass_fractions)")
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
                    "study and write a report: index.html (first the explainers' overall ranking), overall.csv (mean "
                    "rank over the metrics with its bootstrap interval), pairs.csv (the metrics that separate each "
                    "pair of explainers; 'within Monte-Carlo error' where the Monte-Carlo standard errors do not separate "
                    "them), metrics.csv (what each metric measures), report.csv (one row per image × explainer × "
                    "metric, with each Monte-Carlo score's standard error mc_se), summary.csv (means ± standard "
                    "errors), ranks.csv, sanity.csv, cost.csv and map figures.\n\nFirst "
                    "the images, the model's preprocessing and the cost of each metric are shown (model inputs, "
                    "and seconds from three warm forward passes at the run's batch size and a warm call of each "
                    "explainer; estimate.csv sets them beside the measured seconds); metrics that are expensive at "
                    "this image size are named with the --set option that makes them cheaper. A run interrupted "
                    "with Ctrl-C keeps its finished chunks in <out>.partial/: --resume continues it.",
        epilog="examples:\n"
               "  faithlab evaluate --model torchvision:resnet18 --weights my.pt --images my_images/ --out report/\n"
               "  faithlab evaluate --model timm:vit_tiny_patch16_224 --weights vit.pt --images imgs/ \\\n"
               "      --explainers 'attention_gradcam,rollout,random' --n-images 16 --estimate-only\n"
               "  faithlab evaluate ... --explainers 'integrated_gradients:n_steps=16,saliency' --set n_samples=10\n"
               "  faithlab evaluate ... --budget 10m   (fit the run into ten minutes; standard errors reported)\n\n"
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
    g.add_argument("--n-images", type=int, metavar="N", help="evaluate N images spread evenly over the classes: "
                   "round-robin over the class folders in sorted order, each class's images in an order shuffled "
                   "by --seed (a flat folder: N images drawn by --seed); they are evaluated in file order (default: "
                   "all)")
    g.add_argument("--skip-unreadable", action="store_true", help="go on without images that cannot be read (a "
                   "corrupt or truncated file, one over --max-pixels, one whose values have no known range; with "
                   "--n-images another image takes its place) and list them in skipped.txt in the report folder; "
                   "without it such a file stops the command, named")
    g.add_argument("--max-pixels", type=int, default=MAX_PIXELS, metavar="N", help="the largest image read, "
                   "width x height: a larger file (an image bomb: a few KB on disk, gigabytes decoded) stops the "
                   "command naming it, or is skipped with --skip-unreadable (default: %(default)s, PIL's warning "
                   "threshold)")
    g.add_argument("--random-weights", action="store_true", help="evaluate the model with random weights, drawn "
                   "from --seed, when no --weights are given (required then: the scores of an untrained model say "
                   "little)")
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
    g.add_argument("--batch-size", type=int, default=None, metavar="N", help="model inputs per forward call, and "
                   "images loaded per chunk (default: a size fixed by the model's activations for one image, "
                   "the same on every run, and chunks of 64 images)")
    g.add_argument("--budget", metavar="TIME", help="fit the whole run in TIME (e.g. 5m, 300s, 1h): the Monte-Carlo "
                   "counts (RFid/FFid masks, μF subsets, S_avg neighbours) are cut where that costs the least "
                   "precision, and the report gives each score's Monte-Carlo standard error (default: the papers' "
                   "counts, however long they take)")
    g.add_argument("--maps", type=int, default=4, metavar="N", help="map figures for the first N images (default: "
                   "%(default)s)")
    g.add_argument("--out", default="report", metavar="DIR", help="the report folder, replaced when complete; one "
                   "run at a time per folder: a second run on it stops, naming the first (default: %(default)s)")
    g.add_argument("--resume", action="store_true", help="continue an interrupted run (Ctrl-C, a crash) from the "
                   "finished chunks it kept in DIR.partial/ beside the report (refused when an argument, the model "
                   "weights or the images differ); without it such a folder is replaced")
    g.add_argument("--yes", "-y", action="store_true", help="do not ask before running (asked only when the "
                   "input is a terminal)")
    g.add_argument("--estimate-only", action="store_true", help="show the images, preprocessing and cost "
                   "estimate, then exit")
    return parser


def _choose_metrics(text: str | None, *, finetuned: bool) -> list[str]:
    from faithlab.evaluation import METRICS

    if text is None:
        return [m for m, i in METRICS.items() if i.level == "sample" and ("finetuned" not in i.needs or finetuned)]
    chosen = [m.strip() for m in text.split(",") if m.strip()]
    for m in chosen:
        if m not in METRICS:
            raise UsageError("--metrics", f"unknown metric {m!r}; known: {', '.join(METRICS)}")
        if "kfold" in METRICS[m].needs:
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
    """The batches of ``loader`` up to its first ``n`` samples (the last batch cut), as a re-iterable; each tensor
    of a batch moved to ``device`` (the model's) when one is given."""

    def __init__(self, loader, n: int, device=None):
        self.loader, self.n, self.device = loader, n, device

    def _moved(self, batch):
        if self.device is None:
            return batch
        if isinstance(batch, (tuple, list)):
            return type(batch)(self._moved(v) for v in batch)
        if isinstance(batch, dict):
            return {k: self._moved(v) for k, v in batch.items()}
        return batch.to(self.device) if hasattr(batch, "to") else batch

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
            yield self._moved(batch)


def _resized(pre, size: int):
    """The preprocessing ``pre`` resizing the shorter side to ``size`` pixels and centre-cropping ``size`` × ``size``
    (``--size``)."""
    import dataclasses

    return dataclasses.replace(pre, resize=size, crop=(size, size))


def _load(args, echo):
    """The model, its preprocessing, the image folder (the ``--n-images`` sample of readable images) and the
    fine-tuned copy, or UsageError naming the flag. Cheap checks come first: the folder, the files, the weights
    rule, the device."""
    import torch

    import faithlab as fl
    from faithlab import _pixels

    try:
        _pixels.check_pixels(args.max_pixels, "--max-pixels")
    except ValueError as err:
        raise UsageError("--max-pixels", str(err).removeprefix("--max-pixels ")) from None
    images = Path(args.images).expanduser()
    if not images.is_dir():
        raise UsageError("--images", f"{args.images} is not a folder")
    _check_out(args.out, images)
    for flag, value in (("--weights", args.weights), ("--finetuned", args.finetuned)):
        if value is not None and not Path(value).expanduser().is_file():
            raise UsageError(flag, f"no such file {value}")
    if args.weights is None and not args.random_weights:
        raise UsageError("--weights", "none given, so the model would have random weights and its scores would say "
                                      "little; pass --weights FILE, or --random-weights to evaluate it anyway")
    if args.weights is not None and args.random_weights:
        raise UsageError("--random-weights", "contradicts --weights: pass one of them")
    try:
        device = torch.device(args.device)
    except (RuntimeError, ValueError) as err:
        raise UsageError("--device", f"{args.device}: {err}") from None
    if device.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise UsageError("--device", f"{args.device}: no CUDA GPU is available on this machine (torch "
                                         f"{torch.__version__}); use --device cpu")
        if device.index is not None and device.index >= count:
            raise UsageError("--device", f"{args.device}: this machine has {count} GPU(s), cuda:0 to "
                                         f"cuda:{count - 1}; pick one of them or use --device cpu")
    elif device.type == "mps" and not (hasattr(torch.backends, "mps") and torch.backends.mps.is_available()):
        raise UsageError("--device", f"{args.device}: no Apple GPU (MPS) is available on this machine; use --device "
                                     "cpu")
    try:
        if args.random_weights:  # drawn from --seed, so that the same command gives the same model and report
            model = _seeded(lambda: fl.models.load(args.model, weights=args.weights), args.seed)
        else:
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
        model = model.to(device).eval()
        tuned = tuned.to(device).eval() if tuned is not None else None
    except (RuntimeError, AssertionError) as err:
        raise UsageError("--device", f"{args.device}: {err}; use --device cpu") from None
    pre = fl.models.preprocessing(model)
    if args.size is not None:
        if args.size < 8:
            raise UsageError("--size", f"must be at least 8 pixels, got {args.size}")
        pre = _resized(pre, args.size)
    try:
        with warnings.catch_warnings():  # the folders that cannot be listed: said below, in the command's terms
            warnings.filterwarnings("ignore", message="root: .* cannot be listed", category=UserWarning)
            data = fl.data.image_folder(images, preprocess=pre, labels=_labels(args.labels),
                                        max_pixels=args.max_pixels)
    except (ValueError, FileNotFoundError, TypeError) as err:
        raise UsageError("--labels" if str(err).startswith("labels") else "--images", str(err)) from None
    unlisted = data.info.get("unlisted", [])
    if unlisted and not args.skip_unreadable:
        folder, _, why = unlisted[0].partition(": ")
        raise UsageError("--images", f"the folder {os.path.join(images, folder)} cannot be listed ({why})"
                                     f"{f' (and {len(unlisted) - 1} more)' if len(unlisted) > 1 else ''}; give "
                                     "yourself the permission to read it, or pass --skip-unreadable to go on "
                                     "without it")
    if len(data) == 0:
        raise UsageError("--images", f"{args.images} holds no image (png, jpg, jpeg, bmp, webp, tif)")
    data = _readable_sample(data, args, echo)
    return model, tuned, pre, data, device


def _seeded(build, seed: int):
    """``build()`` with torch's CPU generator seeded with ``seed`` (``--random-weights``: the model's random
    initialisation is drawn from ``--seed``, as every other random draw of the run) → its result; the process's own
    random state is as it was before, afterwards. The model is built on the CPU, so only the CPU generator is forked
    and seeded: ``torch.manual_seed`` would also seed the CUDA generators, which ``fork_rng(devices=[])`` leaves
    unrestored."""
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.default_generator.manual_seed(seed)
        return build()


def _check_out(out_arg: str, images: Path) -> None:
    """UsageError naming ``--out`` when the report, which replaces its folder when complete, would replace the
    images, land among them (its figures would be read as images by the next run), or replace a folder that is not
    an earlier report or empty, or a file."""
    from faithlab import report

    out, source = Path(out_arg).expanduser().resolve(), images.resolve()
    if out == source or source.is_relative_to(out):
        raise UsageError("--out", f"{out_arg} holds the --images folder, and the report replaces its folder: pass "
                                  "a folder outside the images")
    if out.is_relative_to(source):
        raise UsageError("--out", f"{out_arg} is inside the --images folder {images}: the report's figures would be "
                                  "read as images by the next run; pass a folder outside the images")
    if out.exists() and not out.is_dir():
        raise UsageError("--out", f"{out_arg} exists and is not a folder")
    try:
        replaceable = not out.is_dir() or report._replaceable(out)
    except OSError as err:
        raise UsageError("--out", f"{out_arg} cannot be listed ({err.strerror or err}); pass a folder you can "
                                  "write to") from None
    if not replaceable:
        raise UsageError("--out", f"{out_arg} holds other files than a faithlab report (no index.html and "
                                  "report.csv), and the report replaces its folder: pass a new folder")


def _readable_sample(data, args, echo):
    """The images to evaluate: ``--n-images`` of them spread evenly over the classes
    (:meth:`~faithlab.data.ImageFolderData.balanced_order` with ``--seed``), or all, each read once here so that an
    unreadable file stops the command before any work, named with ``--images`` — or, with ``--skip-unreadable``, is
    left out (the next image of the balanced order takes its place) and listed in ``info["skipped"]`` (file, why)."""
    from faithlab import _pixels

    n = len(data) if args.n_images is None else min(args.n_images, len(data))
    order = data.balanced_order(args.seed) if n < len(data) else range(len(data))
    chosen, skipped = [], []
    for i in order:
        if len(chosen) == n:
            break
        try:
            data.image(i)
        except ValueError as err:
            cause = err.__cause__ if err.__cause__ is not None else err
            if isinstance(cause, _pixels.UnmappableImage):  # read, but too large or without a known value range
                why = str(cause).replace(f"the file {data.files[i]!r} in {str(data.root)!r}", "it").replace(
                    "max_pixels", "--max-pixels")
                problem = f"{Path(data.root) / data.files[i]}: {why}"
            else:
                why = f"{type(cause).__name__}: {cause}"
                problem = f"{Path(data.root) / data.files[i]} is not a readable image ({why})"
            if not args.skip_unreadable:
                raise UsageError("--images", f"{problem}; remove it, or pass --skip-unreadable to go on without "
                                             "it") from None
            skipped.append((data.files[i], why))
            continue
        chosen.append(i)
    if not chosen:
        raise UsageError("--images", f"none of the {len(skipped)} images in {args.images} is readable (e.g. "
                                     f"{skipped[0][0]}: {skipped[0][1]})")
    if skipped:
        echo(f"skipped {len(skipped)} unreadable image(s) (--skip-unreadable): "
             f"{', '.join(f for f, _ in skipped[:5])}{' …' if len(skipped) > 5 else ''}")
    out = data.subset(sorted(chosen)) if len(chosen) < len(data) else data
    for entry in data.info.get("unlisted", []):  # folders --skip-unreadable went on without
        folder, _, why = entry.partition(": ")
        skipped.append((folder, f"a folder that cannot be listed ({why})"))
    if data.info.get("unlisted"):
        echo(f"skipped {len(data.info['unlisted'])} folder(s) that cannot be listed (--skip-unreadable): "
             f"{', '.join(e.partition(': ')[0] for e in data.info['unlisted'][:5])}")
    out.info["skipped"] = skipped
    return out


def _probe(model, x, batch_size: int, explain: dict, echo) -> dict:
    """Times of the model and the explainers on the first chunk ``x`` (the images :func:`faithlab.evaluate` maps
    and scores together), before any metric runs: :func:`faithlab.evaluation.budget.measure` at the run's forward
    batch size. Out of memory is a UsageError naming ``--batch-size``; a missing optional package of an explainer
    (xrai, TorchRay's) one naming ``--explainers`` and the extra to install."""
    import torch

    from faithlab import _optional
    from faithlab.evaluation import budget

    try:
        return budget.measure(model, x, batch_size, explain)
    except torch.cuda.OutOfMemoryError:
        raise UsageError("--batch-size", f"{batch_size} inputs do not fit in the memory of {x.device} in one "
                                         "forward pass; pass a smaller --batch-size") from None
    except ImportError as err:
        text = _optional.missing(err, "an explainer")
        if text is None:
            raise
        raise UsageError("--explainers", text) from None


CHUNK = 64
"""Images loaded and scored together when ``--batch-size`` is not given."""
REPORT_S, FIGURE_S = 3.0, 0.5
"""Seconds the report takes to write beside its map figures, and per map figure (tables, the bootstrap of the overall
ranking and the plots; measured on a 2-core CPU: estimate.csv's "report" row sets them beside each run's own)."""


def _chunk(args) -> int:
    """Images per chunk of the run: ``--batch-size``, else :data:`CHUNK`."""
    return args.batch_size or CHUNK


def _sanity_metrics(chosen: list[str]) -> list[str]:
    """The metrics the sanity check computes again on a randomised copy (``report.randomisable_metrics``)."""
    from faithlab import evaluation

    return [m for m in chosen if evaluation.METRICS[m].level == "sample"
            and not {"finetuned", "explainer"} & set(evaluation.METRICS[m].needs)]


class _Costs:
    """Estimated seconds of a run per metric group, for given options: :func:`faithlab.evaluation.estimate`'s counts
    (stand-in model and samples, small probe images with the same counts) times the timings of the model and the
    explainers (:func:`_probe`); the sanity check's groups once more. Cached per options (a budget asks twice)."""

    def __init__(self, args, shape, n: int, chosen: list[str], explain: dict, tuned, timing: dict, batch_size: int):
        self.args, self.shape, self.n, self.chosen, self.names = args, tuple(shape), n, chosen, list(explain)
        self.tuned, self.timing, self.batch_size, self.done = tuned, timing, batch_size, {}
        self.sanity = [] if args.no_sanity else _sanity_metrics(chosen)

    def tables(self, options: dict):
        """(the run's table, the sanity check's table or None), each with a ``seconds`` column."""
        import json as _json

        from faithlab import evaluation
        from faithlab.evaluation import budget

        key = _json.dumps(options, sort_keys=True, default=repr)
        if key not in self.done:
            out = []
            for metrics, finetuned in ((self.chosen, self.tuned is not None), (self.sanity, False)):
                if not metrics:
                    out.append(None)
                    continue
                table = evaluation.estimate((self.n, *self.shape), n_classes=self.timing["n_classes"],
                                            explainers=self.names, metrics=metrics, finetuned=finetuned,
                                            explainer=True, chunk_size=_chunk(self.args), batch_size=self.batch_size,
                                            **options)
                table["seconds"] = budget.seconds(table, self.timing)
                out.append(table)
            self.done[key] = tuple(out)
        return self.done[key]

    def maps_seconds(self) -> float:
        return self.n * sum(self.timing["per_map"].values())

    def report_seconds(self) -> float:
        """Writing the report: the map figures' explainer calls on ``--maps`` images, then the page, its tables and
        figures (:data:`REPORT_S` and :data:`FIGURE_S` per map figure, measured on a 2-core CPU)."""
        figures = min(self.args.maps, self.n)
        return REPORT_S + figures * (FIGURE_S + sum(self.timing["per_map"].values()))

    def by_group(self, options: dict) -> dict[str, float]:
        """Seconds per group, the sanity check's as ``"sanity: <group>"``, the maps as ``"maps"``."""
        main, sanity = self.tables(options)
        out = {"maps": self.maps_seconds(), "report": self.report_seconds()}
        for prefix, table in (("", main), ("sanity: ", sanity)):
            if table is not None:
                for group, value in table.groupby("group", sort=False)["seconds"].sum().items():
                    out[prefix + group] = float(value)
        if sanity is not None:
            out["sanity: maps"] = self.maps_seconds()
        return out


def _allocate(args, costs: _Costs, options: dict, given: Sequence[str], spent: float, echo) -> dict:
    """``--budget``: the options with the Monte-Carlo counts that fit what is left of the budget (the seconds
    already ``spent`` by this command subtracted) → options; the choice in one line. A budget that cannot be met is
    a UsageError naming --budget with the number of images that would fit."""
    from faithlab.evaluation import budget
    from faithlab.metrics.registry import OPTIONS

    try:
        total = budget.parse(args.budget, "--budget")
    except (TypeError, ValueError) as err:
        raise UsageError("--budget", str(err).replace("--budget ", "", 1)) from None
    defaults = {k.option: options.get(k.option, OPTIONS[k.option].default) for k in budget.knobs()}
    left = max(1e-3, total - spent)
    allocation = budget.allocate(lambda counts: costs.by_group({**options, **counts}), left, defaults, given)
    line = budget.describe(allocation, costs.n)
    if not allocation.fits:
        raise UsageError("--budget", f"{args.budget} ({left:.0f} s left after loading and timing): "
                                     + line.split(": ", 1)[1] + " (--n-images, --metrics, --no-sanity)")
    echo(line + (f" ({spent:.0f} s of the budget went to loading and timing)" if spent >= 1 else ""))
    return {**options, **allocation.counts}  # every count, even the paper's: --resume reads them back


def _estimate(args, model, data, n: int, chosen: list[str], explain: dict, options: dict, tuned, echo,
              given: Sequence[str] = (), started: float | None = None):
    """Print the cost table (per metric group: model inputs and seconds) and the expensive groups; return the
    estimate per group (``group``, ``metrics``, ``forward_inputs``, ``explained_inputs``, ``seconds``; a ``maps``
    row for the explainers' maps), its total in ``attrs["total"]`` and the options to run with in
    ``attrs["options"]`` (``--budget``'s Monte-Carlo counts, :func:`_allocate`).

    The model inputs are counted by :func:`faithlab.evaluation.estimate` (stand-in model and samples, small probe
    images with the same counts: no metric runs on the model); seconds are those counts times :func:`_probe`'s
    times of the model and the explainers at the run's batch size, plus the library's own work per input
    (:func:`faithlab.evaluation.budget.engine`: the metrics timed on one stand-in image of the run's size with a
    model that costs nothing)."""
    import pandas as pd

    from faithlab import evaluation
    from faithlab.evaluation import budget
    from faithlab.perturb import autobatch
    from faithlab.metrics.registry import tips as metric_tips

    xb = _inputs(next(iter(_first(data.loader(_chunk(args)), n)))).to(next(model.parameters()).device)
    batch_size = args.batch_size or autobatch.default_batch_size(model, xb)
    timing = _probe(model, xb, batch_size, explain, echo)
    timing["engine"] = budget.engine(xb[:1], n_classes=timing["n_classes"], metrics=chosen, batch_size=batch_size,
                                     options=options, finetuned=tuned is not None)
    per_input, per_map = timing["per_input"], timing["per_map"]
    costs = _Costs(args, xb.shape[1:], n, chosen, explain, tuned, timing, batch_size)
    if args.budget is not None:
        spent = 0.0 if started is None else time.perf_counter() - started
        options = _allocate(args, costs, options, given, spent, echo)
    table, again = costs.tables(options)
    by_group = table.groupby("group", sort=False).agg(metrics=("metrics", "first"),
                                                      forward_inputs=("forward_inputs", "sum"),
                                                      explained_inputs=("explained_inputs", "sum"),
                                                      seconds=("seconds", "sum"))
    by_group["per image"] = by_group["forward_inputs"] / n
    by_group["explained per image"] = by_group["explained_inputs"] / n
    maps_seconds = costs.maps_seconds()
    total = float(by_group["seconds"].sum()) + maps_seconds
    shown = by_group.reset_index()[["group", "metrics", "per image", "explained per image", "seconds"]]
    shown = shown.rename(columns={"per image": "model inputs per image", "seconds": "est. seconds"})
    with pd.option_context("display.width", 160, "display.max_colwidth", 60):
        echo(shown.round(1).to_string(index=False))
    echo("(per image: summed over the explainers; explained: inputs given to an explainer, e.g. S_avg's neighbours)")
    probed = table.attrs.get("probe_shape")
    if probed is not None and tuple(probed[1:]) != tuple(xb.shape[1:]):
        echo(f"(model inputs counted on stand-in images of {tuple(probed[1:])}, which take as many as "
             f"{tuple(xb.shape[1:])})")
    how = "--batch-size" if args.batch_size else "the default batch size for this model and image size"
    echo(f"maps: {len(explain)} explainer(s) x {n} images, est. {maps_seconds:.1f} s ("
         + ", ".join(f"{name} {1000 * s:.1f} ms" for name, s in per_map.items())
         + f" per image, timed on {xb.shape[0]}); model: {1000 * per_input:.2f} ms per input on {args.device} "
           f"(median of 3 calls of {batch_size} inputs, {how}, after a warm-up); the library's own work per "
           f"input (building the perturbed inputs, masks and orders) timed per metric group on one image with a "
           f"stand-in model in {timing['engine']['seconds']:.1f} s")
    expensive = by_group[(by_group["seconds"] > 0.2 * total) & (by_group["seconds"] > 10)]
    for group, row in expensive.iterrows():
        tip = metric_tips().get(group, "")
        work = (f"{row['per image']:.0f} model inputs" if row["per image"] else
                f"{row['explained per image']:.0f} explained inputs")
        echo(f"expensive at {tuple(xb.shape[1:])}: {row['metrics'] or group} (~{row['seconds']:.0f} s, {work} per "
             f"image){'; ' + tip if tip else ''}")
    rows = [{"group": "maps", "metrics": "maps", "forward_inputs": 0, "explained_inputs": n * len(explain),
             "seconds": maps_seconds},
            {"group": "report", "metrics": "report", "forward_inputs": 0, "explained_inputs": 0,
             "seconds": costs.report_seconds()}]
    total += rows[-1]["seconds"]
    if again is not None:  # the same metrics on a randomised copy, with its own maps (report.on_randomised)
        rows.append({"group": "sanity check", "metrics": "sanity check", "forward_inputs":
                     int(again["forward_inputs"].sum()), "explained_inputs": int(again["explained_inputs"].sum())
                     + n * len(explain), "seconds": float(again["seconds"].sum()) + maps_seconds})
        echo(f"sanity check: {len(costs.sanity)} model-only metrics once more on a randomised copy of the model, est. "
             f"{rows[-1]['seconds']:.0f} s (--no-sanity skips it)")
        total += rows[-1]["seconds"]
    echo(f"estimated total: {total:.0f} s ({total / 60:.1f} min) for {n} images")
    if args.budget is None and total > 300:
        echo("(--budget TIME, e.g. --budget 5m, fits the run into TIME by cutting only the Monte-Carlo counts; the "
             "report then gives each score's Monte-Carlo standard error)")
    out = by_group[["metrics", "forward_inputs", "explained_inputs", "seconds"]].reset_index()
    out = pd.concat([out, pd.DataFrame(rows)], ignore_index=True)
    out.attrs["total"] = total
    out.attrs["options"] = options
    return out


def _compare_estimate(frame, estimated, echo, randomised=None):
    """The estimate beside what the run measured, per metric group → (``estimate.csv``'s table, the report's cost
    table).

    The first: per group (the clean pass, the fully removed inputs, the maps and each metric group) the estimated
    and measured model inputs, explained inputs and seconds (all explainers together), and their total. The cost
    table (:func:`faithlab.report.cost`) gains each metric's ``group`` with its ``estimated group seconds`` and
    ``measured group seconds`` (Few-class Fid's include its perturbation search, as its cost row does)."""
    import pandas as pd

    from faithlab import evaluation, report

    measured = evaluation.cost(frame).groupby("group", sort=False)[["forward_inputs", "explained_inputs",
                                                                    "seconds"]].sum()
    if randomised is not None:  # the sanity check's whole run, maps included (estimated as one group)
        measured.loc["sanity check"] = evaluation.cost(randomised)[["forward_inputs", "explained_inputs",
                                                                    "seconds"]].sum()
    table = estimated.set_index("group")
    groups = list(dict.fromkeys(list(table.index) + list(measured.index)))
    rows = []
    for g in groups:
        e = table.loc[g] if g in table.index else None
        m = measured.loc[g] if g in measured.index else None
        rows.append({"group": g, "metrics": e["metrics"] if e is not None else g,
                     "estimated model inputs": 0 if e is None else int(e["forward_inputs"]),
                     "measured model inputs": 0 if m is None else int(m["forward_inputs"]),
                     "estimated explained inputs": 0 if e is None else int(e["explained_inputs"]),
                     "measured explained inputs": 0 if m is None else int(m["explained_inputs"]),
                     "estimated seconds": 0.0 if e is None else float(e["seconds"]),
                     "measured seconds": 0.0 if m is None else float(m["seconds"])})
    compared = pd.DataFrame(rows)
    totals = compared.drop(columns=["group", "metrics"]).sum()
    compared = pd.concat([compared, pd.DataFrame([{"group": "total", "metrics": "", **totals.to_dict()}])],
                         ignore_index=True)
    counts = [c for c in compared if c.endswith("inputs")]
    compared[counts] = compared[counts].astype("int64")
    seconds = compared.set_index("group")[["estimated seconds", "measured seconds"]]
    if "fewclass selection" in seconds.index and "fewclass" in seconds.index:
        seconds.loc["fewclass"] += seconds.loc["fewclass selection"]
    cost = report.cost(frame)
    if "metric" in cost:  # one row per metric
        group = cost["metric"].map(lambda m: evaluation.METRICS[m].group if m in evaluation.METRICS else None)
        cost["group"] = group
        cost["estimated group seconds"] = group.map(seconds["estimated seconds"])
        cost["measured group seconds"] = group.map(seconds["measured seconds"])
    est, got = float(totals["estimated seconds"]), float(totals["measured seconds"])
    echo(f"estimate: {est:.1f} s, measured: {got:.1f} s" + (f" ({got / est:.2f} x the estimate)" if est > 0 else "")
         + "; per metric group in estimate.csv and cost.csv")
    return compared, cost


def _with_report(compared, seconds: float, echo):
    """:func:`_compare_estimate`'s table with the measured seconds of writing the report (its ``report`` row) and
    the totals again; prints the estimate beside the measured total."""
    compared = compared.copy()
    at = compared["group"] == "report"
    compared.loc[at, "measured seconds"] = seconds
    rest = compared["group"] != "total"
    compared.loc[~rest, "measured seconds"] = compared.loc[rest, "measured seconds"].sum()
    compared.loc[~rest, "estimated seconds"] = compared.loc[rest, "estimated seconds"].sum()
    est, got = (float(compared.loc[~rest, c].iloc[0]) for c in ("estimated seconds", "measured seconds"))
    echo(f"estimate: {est:.1f} s, measured: {got:.1f} s" + (f" ({got / est:.2f} x the estimate)" if est > 0 else "")
         + "; per metric group in estimate.csv and cost.csv")
    return compared


def _record_extras(out: Path, compared, skipped) -> None:
    """Beside the written report: ``estimate.csv`` (:func:`_compare_estimate`) and ``skipped.txt``, the images
    ``--skip-unreadable`` left out (file, tab, why), when there are any."""
    compared.to_csv(out / "estimate.csv", index=False)
    if skipped:
        (out / "skipped.txt").write_text("".join(f"{f}\t{why}\n" for f, why in skipped), encoding="utf-8")


def _evaluate(args, argv: Sequence[str], echo) -> int:
    """``faithlab evaluate``: the arguments checked, then the run (:func:`_run`) with its report folder held."""
    started = time.perf_counter()  # --budget counts from here
    for flag, value in (("--batch-size", args.batch_size), ("--n-images", args.n_images)):
        if value is not None and value < 1:
            raise UsageError(flag, f"must be a positive integer, got {value}")
    if args.maps < 0:
        raise UsageError("--maps", f"must be a non-negative integer, got {args.maps}")
    chosen_explainers = parse_explainers(args.explainers)
    options = parse_settings(args.settings)
    given = list(options)  # the counts a budget keeps: the user's own --set
    chosen = _choose_metrics(args.metrics, finetuned=args.finetuned is not None)
    # One run per report folder: a second run on the same --out stops here, before any work, naming the first.
    # --estimate-only writes nothing (no report, no <out>.partial/, not even the lock file), so it runs unlocked.
    held = contextlib.nullcontext() if args.estimate_only else _out_lock(args.out, "faithlab " + shlex.join(argv),
                                                                          echo)
    with held:
        return _run(args, argv, echo, started, chosen_explainers, options, given, chosen)


def _run(args, argv: Sequence[str], echo, started: float, chosen_explainers: dict, options: dict,
         given: list[str], chosen: list[str]) -> int:
    """``faithlab evaluate`` once its arguments are checked (and, but for ``--estimate-only``, its report folder is
    held by :func:`_out_lock`): load, estimate, evaluate, write the report."""
    import torch

    import faithlab as fl
    from faithlab import explainers, report

    model, tuned, pre, data, device = _load(args, echo)
    n = len(data) if args.n_images is None else min(args.n_images, len(data))
    labels = "the image folders" if data.labelled else "the model's predictions"
    echo(f"images: {n} from {args.images} ({len(data.classes) if data.labelled else 'no'} classes; labels from "
         f"{labels})")
    echo(f"model: {args.model}{' with ' + args.weights if args.weights else f' ({report.random_weights(args.seed)})'}")
    echo(f"preprocessing: {pre}")
    explain = {name: explainers.explainer(method, seed=args.seed, batch_size=args.batch_size, **opts)
               for name, (method, opts) in chosen_explainers.items()}
    options = {"seed": args.seed, **options}
    declared = fl.metrics.registry.METRICS
    reads_normalisation = any(o.name == "normalisation" for m in chosen for o in declared[m].options)
    if reads_normalisation and getattr(pre, "normalisation", None) is not None:
        options["normalisation"] = pre.normalisation
    try:
        from faithlab.metrics import registry

        first = _inputs(next(iter(data.loader(1))))  # the options are checked against the real image shape
        registry.check_options(options, chosen, torch.zeros(1, *first.shape[1:]))
    except (ValueError, TypeError) as err:
        raise UsageError("--set", str(err)) from None
    if args.budget is not None and args.resume:  # the interrupted run's counts, so its chunks can be read back
        for name, value in _resumed_counts(args).items():
            options[name] = value
            given.append(name)
    estimated = _estimate(args, model, data, n, chosen, explain, options, tuned, echo, given=given, started=started)
    options = estimated.attrs.get("options", options)
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
        # the finished chunks are kept in <out>.partial/ (evaluate/, then sanity/) as the run goes: --resume reads
        # them back after an interruption, so only the unfinished ones are computed again
        from faithlab.evaluation.checkpoint import CheckpointMismatch

        work = _work_folder(args, argv, _fingerprint(args, model, data, n, chosen, chosen_explainers, options, pre),
                            echo)
        try:
            frame = fl.evaluate(model, _first(data.loader(_chunk(args)), n, device), explainer=explain, metrics=chosen,
                                finetuned=tuned, batch_size=args.batch_size, progress=True,
                                checkpoint=work / "evaluate", **options)
            randomised = None
            random = next((name for name, (m, _) in chosen_explainers.items() if m == "random"), None)
            if not args.no_sanity and report.randomisable_metrics(frame):
                echo("sanity check: the model-only metrics on a randomised copy of the model")
                randomised = report.on_randomised(model, _first(data.loader(_chunk(args)), n, device), None, explain,
                                                  frame, scale=args.randomise_scale, generator=args.seed,
                                                  batch_size=args.batch_size, progress=True,
                                                  checkpoint=work / "sanity", **options)
        except CheckpointMismatch as err:  # a difference the fingerprint missed, seen by the chunks' own record
            raise UsageError("--resume", f"the interrupted run in {work} differs from this one: its folder "
                                         f"{err.what}; rerun without --resume to start over") from None
        except BaseException:
            print(f"faithlab: the finished chunks are kept in {work}: run the same command with --resume to "
                  "continue", file=sys.stderr, flush=True)
            raise
    from faithlab.evaluation import hints as hinting

    for w in caught:  # in the command's terms: --labels predictions where the library says y=None, ...
        message = f"{w.category.__name__}: {hinting.for_command(str(w.message))}"
        if message not in hints:
            hints.append(message)
            echo(f"warning: {message}")
    hints += hinting.command_hints(random_map=random is not None, labelled=data.labelled)
    skipped = data.info.get("skipped", [])
    if skipped:
        shown = ", ".join(Path(f).name for f, _ in skipped[:5]) + (" …" if len(skipped) > 5 else "")
        hints.append(f"--skip-unreadable left out {len(skipped)} unreadable image(s): {shown} (all in skipped.txt)")
    compared, costs = _compare_estimate(frame, estimated, lambda _text: None, randomised)
    writing = time.perf_counter()
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
                         command="faithlab " + shlex.join(argv), parameters=parameters, hints=hints,
                         costs=costs, seed=args.seed)
    compared = _with_report(compared, time.perf_counter() - writing, echo)
    _record_extras(Path(index).parent, compared, skipped)
    _discard(work)  # the report is complete: nothing left to resume
    echo(f"done in {time.perf_counter() - start:.0f} s: {index}")
    return 0


def _list_metrics(echo) -> int:
    """One line per metric (name, direction, cost class, what it measures, the --set options it reads), then each of
    those options once with its default, summarised. The cost class reads the model and explainer inputs for one
    image that fl.evaluation.estimate counts: cheap under 50, moderate under 500, expensive from 500."""
    from faithlab import evaluation, report
    from faithlab.metrics import registry
    from faithlab.metrics.registry import OPTIONS

    width, cheap, moderate = 160, 50, 500

    def settable(option: str) -> bool:  # parse_settings' own rule: what --set accepts (the seed has --seed)
        try:
            parse_settings([f"{option}=0"])
        except UsageError:
            return False
        return option != "seed"

    def cut(line: str) -> str:
        return line if len(line) <= width else line[:width - 1] + "…"

    # estimate's counts at 3 x 14 x 14 are those at 3 x 224 x 224 with the default options (the same 7 x 7 TRACE
    # grid; every curve fraction a distinct number of pixels), at a fraction of the cost
    probe = evaluation.estimate((1, 3, 14, 14), n_classes=10, explainers=["e"], finetuned=True, explainer=True)
    per_image = (probe["forward_inputs"] + probe["explained_inputs"]).groupby(probe["group"]).sum()
    lines, read = [], []
    for name, info in evaluation.METRICS.items():
        if info.group in per_image:
            inputs = float(per_image[info.group] + sum(per_image.get(u, 0) for u in info.uses.values()))
            kind = "cheap" if inputs < cheap else "moderate" if inputs < moderate else "expensive"
            cost = f"{kind} ({inputs:,.0f})"
        else:  # not computed by the estimate: ReCo/MeGe need k cross-trained models
            cost = "k models" if "kfold" in info.needs else "?"
        named = {registry.option_name(o.name, info.group): o.name for o in info.options if settable(o.name)}
        options = list(named)
        read += named.items()
        direction = "higher is better" if info.higher_is_better else "lower is better"
        lines.append(cut(f"{name:<17} {direction:<16} {cost:<15} {report.meaning(name)}"
                         + (f" [--set {' '.join(options)}]" if options else "")))
    echo(f"{'metric':<17} {'direction':<16} {'cost':<15} what it measures [its --set options]")
    echo("\n".join(lines))
    echo("cost: model and explainer inputs for one 3x224x224 image at the default options (cheap under 50, moderate "
         "under 500,\n  expensive from 500); ReCo and MeGe need k cross-trained models, which faithlab evaluate "
         "does not train. Every random draw: --seed.")
    echo("options (--set OPTION=VALUE) and their defaults:")
    for shown, option in dict.fromkeys(read):
        echo(cut(f"  {shown} = {report.brief(OPTIONS[option].default)}: {OPTIONS[option].doc}"))
    return 0


def _sha256(path) -> str | None:
    """The sha256 of a file's contents (None for no file)."""
    import hashlib

    if path is None:
        return None
    h = hashlib.sha256()
    with Path(path).expanduser().open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


HASHED = {"--weights": "the file's contents", "--finetuned": "the file's contents",
          "--images": "the images, their order or their labels", "--labels": "the CSV's contents",
          "model weights": "the model's parameters"}
"""Fingerprint entries that are digests: a difference is named by what changed, not by the digests."""

UNFINGERPRINTED = ("command", "list_metrics", "out", "yes", "resume", "estimate_only", "maps")
"""Arguments the scores do not depend on (where the report goes, the map figures, what to print)."""


def _images_digest(data, n: int, batch_size: int) -> str:
    """The sha256 of the ``n`` images evaluated (in order) and their labels: the files' contents when the data
    names its files, else the images as the loader gives them."""
    import hashlib

    h = hashlib.sha256()
    files, root, labels = getattr(data, "files", None), getattr(data, "root", None), getattr(data, "labels", None)
    if isinstance(files, list) and root is not None and len(files) >= n:
        for i, name in enumerate(files[:n]):
            label = "" if labels is None else int(labels[i])
            h.update(f"{name}\0{_sha256(Path(root) / name)}\0{label}\n".encode())
        return h.hexdigest()
    from faithlab.evaluation.checkpoint import digest as _digest

    for batch in _first(data.loader(batch_size), n):
        x, y = (batch[0], batch[1] if len(batch) > 1 else None) if isinstance(batch, (tuple, list)) else (
            (batch["x"], batch.get("y")) if isinstance(batch, dict) else (batch, None))
        h.update(_digest(x, y).encode())
    return h.hexdigest()


def _fingerprint(args, model, data, n: int, chosen: list[str], chosen_explainers: dict, options: dict,
                 pre) -> dict:
    """What the scores of ``faithlab evaluate`` depend on, by flag: every argument but UNFINGERPRINTED, the files
    and images by their contents (a moved folder still resumes), the model's parameters, the versions. A run
    resumes only when all of it is the same."""
    import torch

    import faithlab as fl
    from faithlab.evaluation.checkpoint import module_digest as _module_digest

    entries = {"--set" if k == "settings" else "--" + k.replace("_", "-"): v for k, v in vars(args).items()
               if k not in UNFINGERPRINTED}
    entries.update({
        "--weights": _sha256(args.weights), "--finetuned": _sha256(args.finetuned),
        "--images": _images_digest(data, n, _chunk(args)), "--n-images": n,
        "--labels": args.labels if args.labels in ("folders", "predictions") else _sha256(args.labels),
        "--explainers": chosen_explainers, "--metrics": chosen,
        "--set": {k: v for k, v in options.items() if k != "seed"}, "model weights": _module_digest(model),
        "preprocessing": str(pre), "faithlab version": fl.__version__, "torch version": torch.__version__})
    return json.loads(json.dumps(entries, default=repr))


def _resumed_counts(args) -> dict:
    """The Monte-Carlo counts an interrupted ``--budget`` run chose (read from its ``incomplete.json``), so that
    ``--resume`` runs with them rather than with counts timed anew: {} when there is no such run."""
    from faithlab.evaluation import budget

    marker = Path(args.out).expanduser().resolve()
    marker = marker.with_name(marker.name + ".partial") / "incomplete.json"
    try:
        stored = json.loads(marker.read_text(encoding="utf-8"))["fingerprint"]["--set"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    return {k.option: int(stored[k.option]) for k in budget.knobs() if isinstance(stored.get(k.option), int)}


def _lock_path(out) -> Path:
    """The lock file of the report folder ``out``: ``.<out name>.lock`` beside it, one for ``<out>`` and
    ``<out>.partial/`` both."""
    out = Path(out).expanduser().resolve()
    return out.with_name(f".{out.name}.lock")


def _try_lock(fd: int) -> bool:
    """Take the exclusive ``fcntl.flock`` of the open file ``fd`` without waiting → whether it was taken (False:
    another process holds it). The kernel releases it when its holder's file is closed or the holder dies, even by
    SIGKILL (the study's locks and the training cache's are the same; the package assumes a POSIX system). Other
    failures (a file system without locks) raise OSError."""
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _holder(fd: int) -> dict:
    """The record the holder of a lock file wrote into it (``pid``, ``started``, ``command``), read through ``fd``;
    waits up to a second for a holder that has just taken the lock and not yet written it ({} if none comes)."""
    for _ in range(20):
        os.lseek(fd, 0, os.SEEK_SET)
        try:
            text = os.read(fd, 1 << 16).decode("utf-8", "replace")
        except OSError:
            return {}
        if text.strip():
            try:
                record = json.loads(text)
            except ValueError:  # being written: read again
                record = None
            if isinstance(record, dict) and _alive(record.get("pid")):  # not yet a killed holder's, overwritten
                return record
        time.sleep(0.05)
    return {}


def _alive(pid) -> bool:
    """Whether ``pid`` names a running process (a lock file's record may still be that of a killed run, which the
    new holder has not yet overwritten)."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by another user
        return True
    return True


def _busy(out, record: dict) -> str:
    """The refusal of a run whose ``--out`` another run holds, naming that run from its lock ``record``."""
    command = " ".join(str(record.get("command", "")).split())
    command = command if len(command) <= 300 else command[:299] + "…"
    who = (f"pid {record['pid']}, started {record.get('started', '?')}: {command or '?'}" if "pid" in record else
           "its process did not say which")
    return (f"{out} is in use by another faithlab evaluate ({who}); wait for it to finish or pass another "
            "--out")


def _take(path: Path, out) -> int:
    """The open lock file ``path``, locked by this process → its descriptor; UsageError naming --out when another
    process holds it. A file removed or replaced between its opening and its locking (its holder finished and
    removed it) is not the lock any more: the new one is opened and locked instead."""
    for _ in range(100):
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as err:
            raise UsageError("--out", f"cannot create the lock file {path}: {err.strerror or err}") from None
        try:
            if not _try_lock(fd):
                raise UsageError("--out", _busy(out, _holder(fd)))
            try:
                current = os.stat(path).st_ino
            except FileNotFoundError:
                current = None
            if current == os.fstat(fd).st_ino:
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    raise UsageError("--out", f"cannot lock {path}: other processes keep replacing it")


def _release(fd: int, path: Path) -> None:
    """Remove the lock file, then release its lock by closing it: removed while still locked, so that a run waiting
    for it finds it gone (:func:`_take` then opens a new one), and only when it is still ours."""
    try:
        if os.stat(path).st_ino == os.fstat(fd).st_ino:
            os.unlink(path)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def _out_lock(out, command: str, echo):
    """Hold the report folder ``out`` (and its ``<out>.partial/``) for this run while the block runs: one run per
    output folder, since two would write each other's chunks and report. An OS advisory lock on the file
    ``.<out name>.lock`` beside ``out`` (its parent folder is created), into which the holder writes its pid, start
    time and ``command``; another run on the same ``--out`` gets a UsageError naming --out and that run. The lock is
    released and its file removed when the block ends (done, failed, interrupted); a holder killed outright leaves
    the file, but the kernel has released its lock, so the next run takes it over. On a file system without locks
    the run goes on unlocked, with a warning."""
    path = _lock_path(out)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise UsageError("--out", f"cannot create the folder {path.parent}: {err.strerror or err}") from None
    try:
        fd = _take(path, out)
    except OSError as err:  # e.g. ENOLCK on a network file system: no lock to take
        echo(f"warning: --out: {path.parent} does not support file locks ({err.strerror or err}): nothing keeps "
             f"another run from writing to {out} at the same time")
        yield path
        return
    try:
        import datetime

        record = {"pid": os.getpid(), "started": datetime.datetime.now().isoformat(sep=" ", timespec="seconds"),
                  "command": command}
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, json.dumps(record).encode("utf-8"))
        yield path
    finally:
        _release(fd, path)


def _discard(work: Path) -> None:
    """Remove a run's folder of chunks: renamed away first, so that a removal cut short leaves no half folder under
    its name. A folder already gone (removed by hand, or by another process) is nothing to do."""
    import shutil

    trash = work.with_name(f".{work.name}.discarded-{os.getpid()}")
    shutil.rmtree(trash, ignore_errors=True)
    try:
        work.rename(trash)
    except FileNotFoundError:
        return
    shutil.rmtree(trash, ignore_errors=True)


def _work_folder(args, argv: Sequence[str], fingerprint: dict, echo) -> Path:
    """``<out>.partial/``, the folder beside the report where this run keeps its finished chunks, marked
    incomplete by ``incomplete.json`` (the command, its arguments and the ``fingerprint``). ``--resume``: the
    folder an interrupted run left, or a UsageError naming --resume and what differs; without it such a folder is
    named in one line and replaced. A folder of that name that is not a run's is never touched."""
    import os
    import shutil

    out = Path(args.out).expanduser().resolve()
    work = out.with_name(out.name + ".partial")
    marker = work / "incomplete.json"
    if work.exists():
        if not marker.is_file():
            raise UsageError("--out", f"{work} exists and is not a run's folder of finished chunks (no "
                                      "incomplete.json): move it away, faithlab evaluate keeps its chunks there")
        try:
            stored = json.loads(marker.read_text(encoding="utf-8"))
            command, theirs = str(stored["command"]), dict(stored["fingerprint"])
        except (ValueError, KeyError, TypeError):
            command, theirs = None, None
        if args.resume:
            if theirs is None:
                raise UsageError("--resume", f"{marker} cannot be read: run without --resume to start over")
            differ = [k for k in dict.fromkeys([*fingerprint, *theirs]) if fingerprint.get(k) != theirs.get(k)]
            if differ:
                what = "; ".join(f"{k} ({HASHED[k]})" if k in HASHED else
                                 f"{k} (was {json.dumps(theirs.get(k))}, now {json.dumps(fingerprint.get(k))})"
                                 for k in differ)
                raise UsageError("--resume", f"the interrupted run in {work} differs in {what}: rerun it with the "
                                             "same arguments, or without --resume to start over")
            done = [len(list((work / part).glob("chunk-*.json"))) for part in ("evaluate", "sanity")]
            echo(f"resuming the interrupted run in {work}: {done[0]} chunk(s) of the evaluation and {done[1]} of the "
                 "sanity check are done")
            return work
        echo(f"an interrupted run of {command or 'faithlab evaluate'} is in {work}: pass --resume to continue it "
             "(this run replaces it)")
        _discard(work)
    elif args.resume:
        echo(f"--resume: no interrupted run in {work}; starting from the beginning")
    staging = work.with_name(f".{work.name}.{os.getpid()}")  # created whole: a folder without its marker is not ours
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    arguments = {k: v for k, v in vars(args).items() if k not in ("command", "list_metrics", "resume")}
    (staging / "incomplete.json").write_text(json.dumps({
        "incomplete": True, "command": "faithlab " + shlex.join(argv), "arguments": arguments,
        "fingerprint": fingerprint}, indent=1, default=repr), encoding="utf-8")
    staging.rename(work)
    return work


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
    except ModuleNotFoundError as err:  # an optional package (the report's matplotlib, ...): the extra, in one line
        from faithlab import _optional

        text = _optional.missing(err, f"faithlab {args.command}")
        if text is None:
            raise
        print(f"faithlab {args.command}: error: {text}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("faithlab: interrupted; the report folder was not changed", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
