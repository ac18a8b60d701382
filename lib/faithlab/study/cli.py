"""The runner's command line, ``python -m faithlab.study`` (``list``, ``run``, ``scorecard``, ``compare``)."""

from __future__ import annotations

import argparse
import sys

from faithlab import paths
from faithlab.study.parameters import PROFILES, StudyError, discover, parse_overrides
from faithlab.study.promotion import recover
from faithlab.study.scheduling import run
from faithlab.study.scorecard import write_scorecard

DESCRIPTION = ("Run the study's notebooks: jupytext sources → papermill → executed notebooks and artifacts for the "
               "book.")  # the first line of faithlab.study's docstring


def _compare(first: str, second: str) -> int:
    """Print :func:`faithlab.study.scorecard.compare_runs` of two scorecards; exit status 1 when a decided verdict
    became another decided verdict or "not testable here"."""
    from pathlib import Path

    import pandas as pd

    from faithlab.study.scorecard import SCORECARD, UNSTABLE_CHANGES, compare_runs

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m faithlab.study", description=DESCRIPTION)
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
                            "batch jobs with the profile's 'cluster:' resources (see faithlab.study.cluster)")
    sub.add_parser("scorecard", help="rebuild book/_generated/scorecard.csv, its summary and the study map from the "
                                     "notebooks' claims")
    cmp_p = sub.add_parser("compare", help="compare the verdicts of two output folders (e.g. two training seeds): "
                                           "every claim's verdict in both and whether it flipped")
    cmp_p.add_argument("first", help="a generated folder (holding scorecard.csv) or a scorecard.csv")
    cmp_p.add_argument("second")
    args = parser.parse_args(argv)

    try:
        if args.command == "list":
            for nb in discover():
                print(f"{nb.name}: {nb.defaults}")
            return 0
        if args.command == "compare":
            return _compare(args.first, args.second)
        if args.command == "scorecard":
            generated = paths.generated_dir()
            recover(generated)
            print(write_scorecard(generated))
            return 0
        if args.jobs < 1:
            parser.error("-j/--jobs must be a positive integer")
        if args.timeout < 1:
            parser.error("--timeout must be a positive number of seconds (allowed per cell)")
        results = run(args.notebooks, args.profile, parse_overrides(args.params), args.jobs, args.force, args.timeout,
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
