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

The package's modules: :mod:`~faithlab.cli.arguments` (the flags and their checks), :mod:`~faithlab.cli.loading`
(the model and images), :mod:`~faithlab.cli.estimate` (the cost, before and after), :mod:`~faithlab.cli.run` (the
evaluate command's run), :mod:`~faithlab.cli.resume` (the folder of finished chunks), :mod:`~faithlab.cli.lock` (one
run per ``--out``) and :mod:`~faithlab.cli.listing` (``--list-metrics``). Each imports the heavy packages (torch,
pandas, the metrics) inside its functions, so that the command starts light.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from faithlab.cli import arguments, estimate, listing, loading, lock, resume, run  # noqa: F401  (cli.<module>)
from faithlab.cli.arguments import UsageError, parse_explainers, parse_settings

__all__ = ["main", "UsageError", "parse_explainers", "parse_settings"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``faithlab`` command with ``argv`` (None: ``sys.argv[1:]``) → the exit status: 0 done, 1 stopped or
    failed, 2 a usage error (printed as one line naming the flag, no traceback)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = arguments.build_parser()
    if "--list-metrics" in argv and argv[:1] == ["evaluate"]:
        return listing.list_metrics(print)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse printed the usage error (or the help)
        return int(exc.code or 0)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return run.evaluate(args, argv, lambda text: print(text, flush=True))
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
