"""``faithlab evaluate`` itself: the arguments checked, the report folder held, then the run: load, estimate,
evaluate under a progress bar, the sanity check on a randomised copy, and the report written (:func:`evaluate`).

One concept: the evaluate command's run, from checked arguments to a written report.
"""

from __future__ import annotations

import contextlib
import shlex
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

from faithlab.cli import arguments, estimate, loading, lock, resume
from faithlab.cli.arguments import UsageError, parse_explainers, parse_settings

__all__ = ["evaluate"]

def evaluate(args, argv: Sequence[str], echo) -> int:
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
    chosen = arguments.choose_metrics(args.metrics, finetuned=args.finetuned is not None)
    # One run per report folder: a second run on the same --out stops here, before any work, naming the first.
    # --estimate-only writes nothing (no report, no <out>.partial/, not even the lock file), so it runs unlocked.
    held = contextlib.nullcontext() if args.estimate_only else lock.out_lock(args.out, "faithlab " + shlex.join(argv),
                                                                          echo)
    with held:
        return _run(args, argv, echo, started, chosen_explainers, options, given, chosen)


def _run(args, argv: Sequence[str], echo, started: float, chosen_explainers: dict, options: dict,
         given: list[str], chosen: list[str]) -> int:
    """``faithlab evaluate`` once its arguments are checked (and, but for ``--estimate-only``, its report folder is
    held by :func:`~faithlab.cli.lock.out_lock`): load, estimate, evaluate, write the report."""
    import torch

    import faithlab as fl
    from faithlab import explainers, report

    model, tuned, pre, data, device = loading.load(args, echo)
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

        first = loading.inputs(next(iter(data.loader(1))))  # the options are checked against the real image shape
        registry.check_options(options, chosen, torch.zeros(1, *first.shape[1:]))
    except (ValueError, TypeError) as err:
        raise UsageError("--set", str(err)) from None
    if args.budget is not None and args.resume:  # the interrupted run's counts, so its chunks can be read back
        for name, value in resume.resumed_counts(args).items():
            options[name] = value
            given.append(name)
    estimated = estimate.estimate(args, model, data, n, chosen, explain, options, tuned, echo, given=given, started=started)
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

        work = resume.work_folder(args, argv, resume.fingerprint(args, model, data, n, chosen, chosen_explainers, options, pre),
                            echo)
        try:
            frame = fl.evaluate(model, loading.first(data.loader(arguments.chunk(args)), n, device), explainer=explain, metrics=chosen,
                                finetuned=tuned, batch_size=args.batch_size, progress=True,
                                checkpoint=work / "evaluate", **options)
            randomised = None
            random = next((name for name, (m, _) in chosen_explainers.items() if m == "random"), None)
            if not args.no_sanity and report.randomisable_metrics(frame):
                echo("sanity check: the model-only metrics on a randomised copy of the model")
                randomised = report.on_randomised(model, loading.first(data.loader(arguments.chunk(args)), n, device), None, explain,
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
    compared, costs = estimate.compare_estimate(frame, estimated, lambda _text: None, randomised)
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
    compared = estimate.with_report(compared, time.perf_counter() - writing, echo)
    estimate.record_extras(Path(index).parent, compared, skipped)
    resume.discard(work)  # the report is complete: nothing left to resume
    echo(f"done in {time.perf_counter() - start:.0f} s: {index}")
    return 0
