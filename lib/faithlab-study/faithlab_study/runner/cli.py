"""The runner's command line, ``python -m faithlab_study`` (``list``, ``run``, ``scorecard``, ``compare``).

A usage error (an unknown option value, notebook, profile or parameter, a ``--cluster`` value that cannot work) ends
the command with exit status 2 and one line on stderr, ``error: <what>``, naming the argument: :func:`check_arguments`
finds it before anything slow is imported and before any cluster is contacted.
"""

from __future__ import annotations

import argparse
import sys

from faithlab import paths
from faithlab_study.runner.parameters import PROFILES, StudyError

# Nothing heavy at the top of this module (nor of the package's __init__): the command line is parsed and checked
# (check_arguments) before torch, pandas, dask, distributed, papermill or jupytext are imported or a cluster is
# contacted, so that a usage error answers in a fraction of a second. tests/faithlab_study/runner/test_runner_usage.py checks it.

DESCRIPTION = ("Run the study's notebooks: jupytext sources → papermill → executed notebooks and artifacts for the "
               "book.")  # the first line of faithlab_study's docstring


def _compare(first: str, second: str) -> int:
    """Print :func:`faithlab_study.book.scorecard.compare_runs` of two scorecards; exit status 1 when a decided verdict
    became another decided verdict or "not testable here"."""
    from pathlib import Path

    import pandas as pd

    from faithlab_study.book.scorecard import SCORECARD, UNSTABLE_CHANGES, compare_runs

    cards = []
    for given in (first, second):
        path = Path(given)
        path = path / SCORECARD if path.is_dir() else path
        if not path.is_file():
            raise StudyError(f"no scorecard at {path} (give a generated folder or a scorecard.csv)")
        cards.append(pd.read_csv(path, keep_default_na=False, dtype=str))
    table = compare_runs(*cards)
    with pd.option_context("display.max_rows", None, "display.width", 200, "display.max_colwidth", 40):
        print(table.to_string(index=False))
    print("\n" + ", ".join(f"{n} {c}" for c, n in table["change"].value_counts().items()))
    return 1 if table["change"].isin(UNSTABLE_CHANGES).any() else 0


class UsageError(StudyError):
    """A command-line argument that cannot be used (exit status 2, one line)."""


class _Parser(argparse.ArgumentParser):
    """argparse, whose errors raise :class:`UsageError` (one line) instead of printing the usage and exiting."""

    def error(self, message: str):
        raise UsageError(" ".join(message.split()))


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m faithlab_study", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list the notebooks and their parameters")
    run_p = sub.add_parser("run", help="execute notebooks (all by default)")
    run_p.add_argument("notebooks", nargs="*", help="paper or paper/experiment names (default: all)")
    run_p.add_argument("--profile", default="book", choices=PROFILES)
    run_p.add_argument("-p", "--parameter", nargs=2, action="append", metavar=("NAME", "VALUE"), dest="params")
    run_p.add_argument("-j", "--jobs", type=int, default=1, help="notebooks executed in parallel processes")
    run_p.add_argument("--force", action="store_true", help="execute even when the stamp matches")
    run_p.add_argument("--timeout", type=int, default=3600, help="seconds allowed per cell")
    run_p.add_argument("--cluster", default=None, metavar="ADDRESS|local[:N]|slurm|pbs|sge|lsf",
                       help="execute on a Dask cluster: a scheduler address, a local cluster of N workers, or -j "
                            "batch jobs with the profile's 'cluster:' resources (see faithlab_study.runner.cluster); the "
                            "scheduler must answer within FAITHLAB_CLUSTER_TIMEOUT seconds (default 5)")
    sub.add_parser("scorecard", help="rebuild book/_generated/scorecard.csv, its summary and the study map from the "
                                     "notebooks' claims")
    cmp_p = sub.add_parser("compare", help="compare the verdicts of two output folders (e.g. two training seeds): "
                                           "every claim's verdict in both and whether it flipped")
    cmp_p.add_argument("first", help="a generated folder (holding scorecard.csv) or a scorecard.csv")
    cmp_p.add_argument("second")
    return parser


def check_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The parsed command line, checked; raises :class:`UsageError` (a :class:`StudyError`, one line naming the
    argument) for the first argument that cannot be used, without importing torch, pandas, dask, distributed,
    papermill or jupytext and without contacting a cluster (``--help`` exits as usual).

    For ``run``, in the order :func:`faithlab_study.run` checks them: ``-j``, ``--timeout``, the ``-p`` values
    (``args.overrides`` holds them parsed), the notebook names (their files, none is read), the ``-p`` names
    against the selected notebooks' parameters cells (read only when ``-p`` is given), the profile file and the
    notebooks it names, and the ``--cluster`` value (:func:`faithlab_study.runner.cluster.check`: its form, the batch
    system's submit command, the scheduler file, the host name resolved within ``FAITHLAB_CLUSTER_TIMEOUT`` s).
    """
    args = _parser().parse_args(argv)
    if args.command != "run":
        return args
    from faithlab_study.runner import cluster as clusters
    from faithlab_study.runner.parameters import (
        check_overrides,
        check_profile_notebooks,
        listing,
        load_profile,
        parse_overrides,
        select,
        with_parameters,
    )

    try:
        if args.jobs < 1:
            raise UsageError(f"-j/--jobs must be a positive integer, got {args.jobs}")
        if args.timeout < 1:
            raise UsageError(f"--timeout must be a positive number of seconds (allowed per cell), got {args.timeout}")
        args.overrides = parse_overrides(args.params)
        root = paths.project_root()
        every = listing(root)
        chosen = select(every, args.notebooks)
        if args.overrides:  # the parameters cells of the selected notebooks only (jupytext, no kernel)
            check_overrides([with_parameters(nb) for nb in chosen], args.overrides)
        spec = load_profile(args.profile, root)
        check_profile_notebooks(args.profile, spec, every)
        if args.cluster is not None:
            clusters.check(args.cluster)
    except UsageError:
        raise
    except (StudyError, clusters.ClusterError) as exc:
        raise UsageError(str(exc)) from None
    return args


def main(argv: list[str] | None = None) -> int:
    try:
        args = check_arguments(argv)
        if args.command == "list":
            from faithlab_study.runner.parameters import discover

            for nb in discover():
                print(f"{nb.name}: {nb.defaults}")
            return 0
        if args.command == "compare":
            return _compare(args.first, args.second)
        if args.command == "scorecard":
            from faithlab_study.runner.promotion import recover
            from faithlab_study.book.scorecard import write_scorecard

            generated = paths.generated_dir()
            recover(generated)
            print(write_scorecard(generated))
            return 0
        from faithlab_study.runner.scheduling import run

        results = run(args.notebooks, args.profile, args.overrides, args.jobs, args.force, args.timeout,
                      cluster=args.cluster)
    except StudyError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    failed = [r for r in results if r.status == "failed"]
    if failed:
        print(f"\n{len(failed)} notebook(s) failed:", file=sys.stderr)
        for r in failed:
            print(f"  {r.name}: {r.message}", file=sys.stderr)
        return 1
    ran = sum(r.status == "ran" for r in results)
    print(f"{ran} executed, {len(results) - ran} up to date")
    return 0
