"""The model and images of ``faithlab evaluate``: the model loaded (its weights, ``--random-weights`` drawn
from ``--seed``, the device), its preprocessing, the ``--n-images`` sample of readable images (:func:`load`), the
``--out`` folder checked against them, and the batches of the first ``n`` images (:class:`first`).

One concept: from the flags naming a model and a folder to the model and the images the run evaluates.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

from faithlab.cli.arguments import UsageError

__all__ = ["load", "inputs", "first"]


def _labels(value: str):
    """``--labels`` → the ``labels`` of :func:`faithlab.data.image_folder`."""
    if value in ("folders", "predictions"):
        return "folders" if value == "folders" else None
    path = Path(value).expanduser()
    if not path.is_file():
        raise UsageError("--labels", f"no such file {value}; give 'folders', 'predictions' or a CSV file (file,label)")
    return path


def inputs(batch):
    """The images of one batch of a loader: ``x``, ``(x, y)`` or ``{"x": ...}``."""
    return batch[0] if isinstance(batch, (tuple, list)) else batch["x"] if isinstance(batch, dict) else batch


class first:
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
            b = inputs(batch).shape[0]
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


def load(args, echo):
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
        replaceable = not out.is_dir() or report.replaceable(out)
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
