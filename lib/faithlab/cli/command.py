"""The ``faithlab`` command's entry point (``faithlab = "faithlab.cli:main"``, ``python -m faithlab``): :func:`main`
parses the flags and runs the command, answering a usage error with one line and exit status 2."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from faithlab.cli import arguments, listing, run
from faithlab.cli.arguments import UsageError

__all__ = ["main"]


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
