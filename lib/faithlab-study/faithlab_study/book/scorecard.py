"""The scorecard: every present notebook's claims in one table, and the front page's verdict counts and study map."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from faithlab import paths
from faithlab_study.artifacts import CELL_COLUMNS, CLAIM_COLUMNS, CLAIMS  # what each notebook writes
from faithlab_study.book.generated import first_line, locked, outputs_lock, to_stderr

if TYPE_CHECKING:
    import pandas as pd

SCORECARD = "scorecard.csv"
SUMMARY = "scorecard_summary.csv"  # verdict counts per paper, for the front page
PREREGISTRATION = "preregistration.csv"  # every claim's rule, decision, premise and the commit its rule last changed
CELLS_TABLE = "cells.csv"  # every claim's cell table in one (the notebooks' cells/<slug>.csv), keyed by its claim
CELLS_KEYS = ("paper", "experiment", "claim", "rule_id", "verdict")  # the columns before CELL_COLUMNS in cells.csv
_RULE_COMMITS = ".rule_commits.json"  # cache of git's answer per (HEAD, claim function)
STUDY_MAP = "study_map"  # .png and .svg: the front page's map of papers → metrics → experiments → verdicts
ALL_PAPERS = "all papers"  # the summary's row after the five papers
STUDY_CHECK = "(study check)"  # the suffix of a summary row that is not a paper (basics, synthesis)
_OPTIONAL_CLAIM_COLUMNS = {  # absent from claims written before claims were functions / before replicas
    "rule": "", "premise": "", "kind": "paper", "decision": "", "replicas": "—", "stability": "—", "units": None,
    "function": "", "power": "", "rule_id": "", "trained_replicas": None, "cells": "",
    "before": "", "prospective": ""}


def summarise(scorecard: pd.DataFrame) -> pd.DataFrame:
    """Verdict counts per paper of a scorecard frame (columns :data:`CLAIM_COLUMNS`) → one row per paper of
    :data:`faithlab_study.book.chapters.CHAPTERS` present, in the book's order, with columns paper (display name,
    :data:`~faithlab_study.book.chapters.PAPER_NAMES`), one per verdict (:data:`faithlab_study.verdicts.VERDICTS` order) and total (its
    claims of kind "paper"); then the row "all papers" (the five papers' sum); then the study's own checks, one row
    per slug named "<name> (study check)": every claim of another slug (basics, synthesis, ...) and a chapter's claims
    of kind "study check" (identities, ratios fixed by design, checks of our stand-ins), which no paper's count and
    not the papers' total hold."""
    import pandas as pd

    from faithlab_study.book.chapters import CHAPTERS, PAPER_NAMES, paper_order
    from faithlab_study.verdicts import VERDICTS

    papers = scorecard["paper"].astype(str)
    kinds = scorecard["kind"].astype(str) if "kind" in scorecard else pd.Series("paper", index=scorecard.index)
    check = (kinds == "study check") | ~papers.isin(list(CHAPTERS))

    def row(p: str, name: str, mask) -> list:
        sel = (papers == p) & mask
        return [name, *((scorecard["verdict"][sel] == v).sum() for v in VERDICTS), int(sel.sum())]

    ordered = paper_order(papers)
    rows = [row(p, PAPER_NAMES.get(p, p), ~check) for p in ordered if p in CHAPTERS]
    table = pd.DataFrame(rows, columns=["paper", *VERDICTS, "total"]).astype({c: int for c in (*VERDICTS, "total")})
    table.loc[len(table)] = [ALL_PAPERS, *table[[*VERDICTS, "total"]].sum().astype(int)]
    for p in ordered:
        if ((papers == p) & check).any():
            table.loc[len(table)] = row(p, f"{PAPER_NAMES.get(p, p)} {STUDY_CHECK}", check)
    return table.astype({c: int for c in (*VERDICTS, "total")})


def _git(*args: str) -> str | None:
    import subprocess

    try:
        done = subprocess.run(["git", *args], cwd=paths.project_root(), capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def rule_commit(function: str) -> str:
    """The short hash and date of the last commit that changed claim function ``function`` ("module.qualname") or a
    rule registered above it, from ``git log -L first,last:file`` over its lines with their decorators (its lines,
    not its file); "uncommitted" when its file has changes not yet committed, "—" without git or when the function
    is unknown."""
    import importlib
    import inspect

    module, _, name = str(function).rpartition(".")
    try:
        fn = importlib.import_module(module)
        for part in name.split("."):
            fn = getattr(fn, part)
        source = Path(inspect.getsourcefile(fn)).resolve()
        relative = source.relative_to(paths.project_root().resolve()).as_posix()
        lines, first = inspect.getsourcelines(fn)
    except (ImportError, AttributeError, TypeError, ValueError, OSError):
        return "—"
    if _git("diff", "--quiet", "HEAD", "--", relative) is None and _git("rev-parse", "HEAD") is not None:
        return "uncommitted"
    first = max(first, 1)
    answer = _git("log", "-1", "--format=%h %as", "-L", f"{first},{first + len(lines) - 1}:{relative}", "--no-patch")
    return answer.splitlines()[0] if answer else "—"


def preregistration(scorecard: pd.DataFrame, generated: Path | None = None) -> pd.DataFrame:
    """The pre-registration table: one row per claim with what decides it — the paper, whether it is a paper's claim
    or a study check, its rule (statistic, unit, direction, margin), the decision text the deciding function
    generated, its premise (with its null), the claim function and the commit where that function last changed.
    Git's answers are cached in ``generated`` per HEAD commit, so a warm build asks git nothing."""
    import json

    import pandas as pd

    head = _git("rev-parse", "--short", "HEAD") or "—"
    cache_path = Path(generated) / _RULE_COMMITS if generated is not None else None
    cache: dict = {}
    if cache_path is not None and cache_path.is_file():
        try:
            cache = json.loads(cache_path.read_text())
        except (OSError, ValueError):
            cache = {}
    known = cache.get(head, {}) if head != "—" else {}
    functions = scorecard["function"].astype(object).fillna("").astype(str) if "function" in scorecard else pd.Series(
        "", index=scorecard.index)
    for f in sorted(set(functions) - set(known) - {""}):
        known[f] = rule_commit(f)
    if cache_path is not None and head != "—":
        paths.atomic_write(cache_path, lambda tmp: Path(tmp).write_text(json.dumps({head: known})))
    frame = pd.DataFrame({
        "paper": scorecard["paper"], "experiment": scorecard.get("experiment", ""), "claim": scorecard["claim"],
        "kind": scorecard.get("kind", "paper"), "rule": scorecard.get("rule", ""),
        "decision": scorecard.get("decision", ""), "premise": scorecard.get("premise", ""),
        "function": functions, "rule last changed": [known.get(f, "—") if f else "—" for f in functions],
        "rule_id": scorecard.get("rule_id", "")})
    return frame.reset_index(drop=True)


def cell_tables(folder: Path, claims: pd.DataFrame, echo) -> list[pd.DataFrame]:
    """The cell tables that the claims of one notebook (its folder and ``claims.csv`` frame) name in their ``cells``
    column, each with the columns :data:`CELLS_KEYS` of its claim before its own; a path outside the folder or an
    unreadable table is skipped with a message (``echo``)."""
    import pandas as pd

    tables = []
    for row in claims.to_dict("records"):
        relative = row.get("cells")
        if not isinstance(relative, str) or not relative.strip():
            continue
        path = (folder / relative).resolve()
        try:
            path.relative_to(folder.resolve())
            table = pd.read_csv(path)
        except (OSError, ValueError) as exc:
            echo(f"{folder / relative}: cell table skipped ({first_line(exc)})")
            continue
        keys = pd.DataFrame({k: [row.get(k, "")] * len(table) for k in CELLS_KEYS}, index=table.index)
        tables.append(pd.concat([keys, table], axis=1))
    return tables


def write_scorecard(generated: Path | None = None, echo=None) -> Path:
    """Collect the ``claims.csv`` of every notebook present into ``book/_generated/scorecard.csv`` (atomically),
    with the front page's ``scorecard_summary.csv`` (:func:`summarise`) and ``study_map.png``/``.svg``
    (:func:`faithlab_study.book.figures.study_map`, the metrics of :func:`~faithlab_study.book.figures.paper_metrics`), and every
    claim's cell table in one ``cells.csv`` (``cell_tables``); all are written even when no claim exists, so the
    book never misses them. Returns the scorecard's path.

    A notebook is present when its executed ``<experiment>.ipynb`` stands beside its folder (a folder without it is
    an interrupted run's or an interactive session's). An unreadable ``claims.csv`` (or one with a verdict outside
    :data:`faithlab_study.verdicts.VERDICTS`) is skipped with a message (``echo``, default stderr) naming it. Runs under
    the outputs lock, so no promotion is seen half done and concurrent runners write the scorecard one after the
    other, each from the complete state of its moment.
    """
    import pandas as pd

    from faithlab_study.book.chapters import CHAPTERS
    from faithlab_study.book.figures import paper_metrics, study_map
    from faithlab_study.verdicts import VERDICTS

    generated = Path(generated or paths.generated_dir())
    echo = echo or to_stderr
    generated.mkdir(parents=True, exist_ok=True)
    with locked(outputs_lock(generated)):
        frames, cells = [], []
        for claims in sorted(generated.glob(f"*/*/{CLAIMS}")):
            folder = claims.parent
            if folder.parent.name.startswith("."):  # .staging and the like are not notebooks
                continue
            if not (folder.parent / f"{folder.name}.ipynb").is_file():
                echo(f"{claims}: skipped, {folder.parent.name}/{folder.name}.ipynb is missing (an interrupted run?)")
                continue
            try:
                frame = pd.read_csv(claims, dtype={"paper": str, "experiment": str, "claim": str})
                for column, default in _OPTIONAL_CLAIM_COLUMNS.items():
                    if column not in frame.columns:
                        frame[column] = default
                missing = [c for c in CLAIM_COLUMNS if c not in frame.columns]
                if missing:
                    raise ValueError(f"no column {missing}")
                unknown = sorted(set(frame["verdict"].astype(str)) - set(VERDICTS))
                if unknown:
                    raise ValueError(f"verdicts {unknown} outside {VERDICTS}")
            except (OSError, ValueError) as exc:  # pandas' ParserError/EmptyDataError and UnicodeDecodeError too
                echo(f"{claims}: unreadable claims, skipped ({first_line(exc)})")
                continue
            frames.append(frame)
            cells += cell_tables(folder, frame, echo)
        table = (pd.concat(frames, ignore_index=True)[list(CLAIM_COLUMNS)] if frames
                 else pd.DataFrame(columns=list(CLAIM_COLUMNS)))
        table = table.sort_values(["paper", "experiment", "claim"], kind="stable")
        card = paths.atomic_write(generated / SCORECARD, lambda tmp: table.to_csv(tmp, index=False))
        every_cell = (pd.concat(cells, ignore_index=True) if cells
                      else pd.DataFrame(columns=[*CELLS_KEYS, *CELL_COLUMNS]))
        paths.atomic_write(generated / CELLS_TABLE, lambda tmp: every_cell.to_csv(tmp, index=False))
        summary = summarise(table)
        paths.atomic_write(generated / SUMMARY, lambda tmp: summary.to_csv(tmp, index=False))
        prereg = preregistration(table, generated)
        paths.atomic_write(generated / PREREGISTRATION, lambda tmp: prereg.to_csv(tmp, index=False))
        papers_only = table[table["kind"].astype(str) != "study check"]  # study checks are counted apart
        # the five papers' metrics: the rival metrics (slug "synthesis": ROAD, infidelity) are no paper's claims
        fig = study_map(papers_only, {k: v for k, v in paper_metrics().items() if k in CHAPTERS})
        for fmt in ("png", "svg"):
            paths.atomic_write(generated / f"{STUDY_MAP}.{fmt}",
                               lambda tmp, fmt=fmt: fig.savefig(tmp, format=fmt, dpi=150, bbox_inches="tight"))
        return card


def compare_runs(first: pd.DataFrame, second: pd.DataFrame) -> pd.DataFrame:
    """Two scorecards of the same claims (e.g. training seed 0 and seed 1) side by side: one row per claim present
    in both, with both verdicts and the change, classed as

    - "same";
    - "to/from inconclusive": between a verdict and "inconclusive" (more or less evidence: allowed);
    - "inconclusive ↔ not testable": neither run decided (allowed);
    - "decided ↔ not testable": a premise that holds in one run only while the other run decided (not allowed);
    - "size or parts": between two verdicts that both find the paper's effect here
      (:data:`~faithlab_study.verdicts.PRESENT`: reproduced, reproduced weaker, partly reproduced) — its size shown in
      one run and not in the other, or another share of its parts (allowed: the direction holds in both);
    - "flip": between a verdict of PRESENT and "not reproduced" — the effect found in one run, shown absent or
      reversed in the other (not allowed).

    Matched on paper, experiment and the claim's label (the text before its first colon, so that a value quoted in
    the text does not break the match; the whole text where two claims of a notebook share a label)."""
    import pandas as pd

    from faithlab_study.verdicts.words import INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTABLE, PRESENT

    def keyed(card):
        card = card.copy()
        label = card["claim"].astype(str).str.split(":", n=1).str[0].str.strip()
        # the label when it names one claim of its notebook, else the whole text (F1 (SG-SQ) on two data sets)
        unique = ~card.assign(label=label).duplicated(["paper", "experiment", "label"], keep=False)
        card["label"] = label.where(unique, card["claim"].astype(str))
        return card.drop_duplicates(["paper", "experiment", "label"]).set_index(["paper", "experiment", "label"])

    a, b = keyed(first), keyed(second)
    both = a.index.intersection(b.index)
    rows = []
    for key in both:
        va, vb = str(a.loc[key, "verdict"]), str(b.loc[key, "verdict"])
        pair = {va, vb}
        change = ("same" if va == vb else
                  "size or parts" if pair <= set(PRESENT) else
                  "flip" if pair <= {*PRESENT, NOT_REPRODUCED} else
                  "inconclusive ↔ not testable" if pair == {INCONCLUSIVE, NOT_TESTABLE} else
                  "decided ↔ not testable" if NOT_TESTABLE in pair else
                  "to/from inconclusive")
        rows.append({"paper": key[0], "experiment": key[1], "claim": key[2], "first": va, "second": vb,
                     "change": change})
    return pd.DataFrame(rows, columns=["paper", "experiment", "claim", "first", "second", "change"])


UNSTABLE_CHANGES = ("flip", "decided ↔ not testable")
"""The changes of :func:`compare_runs` that a stable procedure must never give between two training seeds."""
