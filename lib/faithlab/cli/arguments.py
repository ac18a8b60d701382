"""The ``faithlab evaluate`` command line: its flags (:func:`build_parser`), the checks of their values
(:func:`parse_explainers`, :func:`parse_settings`, :func:`choose_metrics`; a value that cannot work is a
:class:`UsageError` naming its flag) and the images per chunk of the run (:func:`chunk`).

One concept: the command's arguments, from the text typed to checked values.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from faithlab._pixels import MAX_PIXELS  # numpy only: the command's start stays light

__all__ = ["UsageError", "parse_explainers", "parse_settings", "build_parser", "choose_metrics", "chunk", "CHUNK",
           "DEFAULT_EXPLAINERS"]

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
        scoped = registry.scoped_name(key)  # <group>_<keyword>: that group's metrics only
        if key not in settable and (scoped is None or scoped[1] in fixed):
            raise UsageError("--set", f"unknown option {key!r}; options: {', '.join(settable)} (or "
                                      "<group>_<option> for one group's metrics, e.g. fewclass_fractions)")
        out[key] = _parse_value(value.strip())
    return out


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="faithlab", description="faithlab: faithfulness metrics of post-hoc explanations.",
        epilog="Run 'faithlab evaluate --help' for the report on your own model and images. The study's notebooks "
               "run with 'python -m faithlab_study' (the faithlab-study distribution, installed on top).")
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


def choose_metrics(text: str | None, *, finetuned: bool) -> list[str]:
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


CHUNK = 64
"""Images loaded and scored together when ``--batch-size`` is not given."""


def chunk(args) -> int:
    """Images per chunk of the run: ``--batch-size``, else :data:`CHUNK`."""
    return args.batch_size or CHUNK
