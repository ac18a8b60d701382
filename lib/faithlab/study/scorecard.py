"""The scorecard: every present notebook's claims in one table, and the front page's verdict counts and study map."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from faithlab import paths
from faithlab.outputs import CLAIM_COLUMNS, CLAIMS  # what each notebook writes; re-exported by faithlab.study
from faithlab.study.promotion import _locked, _outputs_lock
from faithlab.study.stamps import _first_line, _stderr

if TYPE_CHECKING:
    import pandas as pd

SCORECARD = "scorecard.csv"
SUMMARY = "scorecard_summary.csv"  # verdict counts per paper, for the front page
STUDY_MAP = "study_map"  # .png and .svg: the front page's map of papers → metrics → experiments → verdicts
ALL_PAPERS = "all papers"  # the summary's row after the five papers
STUDY_CHECK = "(study check)"  # the suffix of a summary row that is not a paper (basics, synthesis)
_OPTIONAL_CLAIM_COLUMNS = {  # absent from claims written before claims were functions / before replicas
    "rule": "", "premise": "", "kind": "paper", "decision": "", "replicas": "—", "stability": "—", "units": None,
    "function": ""}


def summarise(scorecard: pd.DataFrame) -> pd.DataFrame:
    """Verdict counts per paper of a scorecard frame (columns :data:`CLAIM_COLUMNS`) → one row per paper of
    :data:`faithlab.plots.CHAPTERS` present, in the book's order, with columns paper (display name,
    :data:`faithlab.plots.PAPER_NAMES`), one per verdict (:data:`faithlab.verdicts.VERDICTS` order) and total (its
    claims of kind "paper"); then the row "all papers" (the five papers' sum); then the study's own checks, one row
    per slug named "<name> (study check)": every claim of another slug (basics, synthesis, ...) and a chapter's claims
    of kind "study check" (identities, ratios fixed by design, checks of our stand-ins), which no paper's count and
    not the papers' total hold."""
    import pandas as pd

    from faithlab.plots import CHAPTERS, PAPER_NAMES, paper_order
    from faithlab.verdicts import VERDICTS

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


def write_scorecard(generated: Path | None = None, echo=None) -> Path:
    """Collect the ``claims.csv`` of every notebook present into ``book/_generated/scorecard.csv`` (atomically),
    with the front page's ``scorecard_summary.csv`` (:func:`summarise`) and ``study_map.png``/``.svg``
    (:func:`faithlab.plots.study_map`, the metrics of :data:`faithlab.evaluation.PAPER_METRICS`); all three are
    written even when no claim exists, so the book never misses them. Returns the scorecard's path.

    A notebook is present when its executed ``<experiment>.ipynb`` stands beside its folder (a folder without it is
    an interrupted run's or an interactive session's). An unreadable ``claims.csv`` (or one with a verdict outside
    :data:`faithlab.verdicts.VERDICTS`) is skipped with a message (``echo``, default stderr) naming it. Runs under
    the outputs lock, so no promotion is seen half done and concurrent runners write the scorecard one after the
    other, each from the complete state of its moment.
    """
    import pandas as pd

    from faithlab import plots
    from faithlab.evaluation import PAPER_METRICS  # the runner knows no metric: the library lists them
    from faithlab.verdicts import VERDICTS

    generated = Path(generated or paths.generated_dir())
    echo = echo or _stderr
    generated.mkdir(parents=True, exist_ok=True)
    with _locked(_outputs_lock(generated)):
        frames = []
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
                echo(f"{claims}: unreadable claims, skipped ({_first_line(exc)})")
                continue
            frames.append(frame)
        table = (pd.concat(frames, ignore_index=True)[list(CLAIM_COLUMNS)] if frames
                 else pd.DataFrame(columns=list(CLAIM_COLUMNS)))
        table = table.sort_values(["paper", "experiment", "claim"], kind="stable")
        card = paths.atomic_write(generated / SCORECARD, lambda tmp: table.to_csv(tmp, index=False))
        summary = summarise(table)
        paths.atomic_write(generated / SUMMARY, lambda tmp: summary.to_csv(tmp, index=False))
        fig = plots.study_map(table, PAPER_METRICS)
        for fmt in ("png", "svg"):
            paths.atomic_write(generated / f"{STUDY_MAP}.{fmt}",
                               lambda tmp, fmt=fmt: fig.savefig(tmp, format=fmt, dpi=150, bbox_inches="tight"))
        return card
