"""Every notebook runs in the smoke profile, the book builds with warnings as errors, and a browser looks at it.

The notebooks write into a temporary copy of the book (FAITHLAB_GENERATED), so the test never touches the
user's book/_generated or its stamps.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from faithlab import study

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = [nb.name for nb in study.discover(ROOT)]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def smoke_book(tmp_path_factory):
    """A copy of book/ whose _generated folder holds the smoke-profile outputs of every notebook."""
    site = tmp_path_factory.mktemp("site")
    shutil.copytree(ROOT / "book", site / "book", ignore=shutil.ignore_patterns("_build", "_generated"))
    shutil.copy(ROOT / "_config.yml", site / "_config.yml")
    (site / "benchmarks").mkdir()  # the Speed page includes the benchmarks' record
    shutil.copy(ROOT / "benchmarks" / "RESULTS.md", site / "benchmarks" / "RESULTS.md")
    generated = site / "book" / "_generated"
    # two notebooks at a time, as `make book` runs them (shared trained models wait on the cache's per-key lock)
    results = study.run(profile="smoke", root=ROOT, generated=generated, force=True, jobs=2, timeout=600)
    return site, {r.name: r for r in results}


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs_in_smoke_profile(smoke_book, name):
    site, results = smoke_book
    result = results[name]
    assert result.status == "ran", f"{name} failed: {result.message}"
    paper, experiment = name.split("/")
    executed = site / "book" / "_generated" / paper / f"{experiment}.ipynb"
    assert executed.is_file()
    assert any((site / "book" / "_generated" / paper / experiment).iterdir()), f"{name} wrote no artifact"
    outputs = [o for cell in json.loads(executed.read_text())["cells"] for o in cell.get("outputs", [])]
    shown = sum("image/png" in o.get("data", {}) for o in outputs)
    saved = len(list((site / "book" / "_generated" / paper / experiment).glob("*.png")))
    assert shown >= saved, f"{name} saved {saved} figure(s) but shows {shown} in its outputs"
    printed = "".join("".join(o.get("text", "")) for o in outputs if o.get("output_type") == "stream")
    assert not WARNING_TEXT.search(printed), f"{name} prints a warning: {WARNING_TEXT.search(printed).group(0)}"
    # The runner moves stderr (warnings, progress bars) off the page into stderr.log: a notebook must write none.
    log = site / "book" / "_generated" / paper / experiment / "stderr.log"
    assert not log.is_file(), f"{name} wrote to stderr:\n{log.read_text()[:2000]}"


SHARDED = [nb.name for nb in study.discover(ROOT) if {"shard", "n_shards"} <= set(nb.defaults)]


def test_sharded_notebooks_equal_their_unsharded_smoke_runs(smoke_book, tmp_path):
    """SaCo's and F-Fidelity's image notebooks run as 2 shards and a reduce step (2 local processes): every table
    they write equals the unsharded run's (floats to 1e-6 relative: shards run with other thread counts), but for
    wall-clock timings (columns named "seconds", and the seconds a claim quotes), which differ from run to run."""
    import re

    import pandas as pd

    def untimed(frame: pd.DataFrame) -> pd.DataFrame:
        frame = frame.drop(columns=[c for c in frame.columns if "seconds" in str(c)])
        if "our_value" in frame.columns:
            frame["our_value"] = frame["our_value"].map(lambda v: re.sub(r"[\d.]+ in seconds", "…", str(v)))
        return frame

    assert {"saco/random_vs_methods", "ffidelity/images_ranking", "ffidelity/images_variants"} <= set(SHARDED)
    site, _ = smoke_book
    generated = tmp_path / "generated"
    results = study.run(SHARDED, profile="smoke", root=ROOT, generated=generated, force=True, jobs=2, timeout=600,
                        overrides={"n_shards": 2}, echo=lambda *_: None)
    assert all(r.status == "ran" and "2 shards" in r.message for r in results), [r.message for r in results]
    for name in SHARDED:
        unsharded = site / "book" / "_generated" / name
        tables = sorted(p.name for p in unsharded.glob("*.csv"))
        assert tables and tables == sorted(p.name for p in (generated / name).glob("*.csv")), name
        for table in tables:
            pd.testing.assert_frame_equal(untimed(pd.read_csv(generated / name / table)),
                                          untimed(pd.read_csv(unsharded / table)), rtol=1e-6, obj=f"{name}/{table}")
    assert not (generated / study.SHARDS).exists()


def test_the_paper_items_tables_name_files_the_notebooks_write(smoke_book):
    """Each chapter's "The paper's tables and figures" names the csv and png files where an item is regenerated: every
    plain name (no pattern) must be an output of that paper's notebooks, so the inventory cannot point at nothing."""
    site, _ = smoke_book
    generated = site / "book" / "_generated"
    for page in ("ffidelity", "fewclass", "saco", "reco_mege", "trace"):
        text = (ROOT / "book" / f"{page}.md").read_text()
        section = text.split("## The paper's tables and figures", 1)[1].split("\n## ", 1)[0]
        names = set(re.findall(r"`([^`*{}]+\.(?:csv|png))`", section))
        assert names, f"{page}: no file named in its paper-items table"
        written = {f.relative_to(generated / page).as_posix() for f in (generated / page).rglob("*.*")}
        missing = [n for n in names if not any(w == n or w.endswith("/" + n) for w in written)]
        assert not missing, f"{page}: the paper-items table names files no notebook wrote: {missing}"


@pytest.fixture(scope="module")
def built_book(smoke_book):
    site, results = smoke_book
    failed = [r.name for r in results.values() if r.status != "ran"]
    if failed:
        pytest.fail(f"cannot build the book: notebooks failed: {failed}")
    jb = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(jb), "build", "book", "--config", "_config.yml", "-W", "-n", "--keep-going", "--all"]
    proc = subprocess.run(cmd, cwd=site, capture_output=True, text=True, timeout=900)
    return site / "_build" / "html", proc


def test_book_builds_with_warnings_as_errors(built_book):
    html, proc = built_book
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert (html / "index.html").is_file()
    for page in ("basics", "ffidelity", "saco", "scorecard", "references"):
        assert (html / f"{page}.html").is_file(), page
    basics = (html / "basics.html").read_text()
    assert "deletion_curves.png" in basics and "<table" in basics
    intro = (html / "intro.html").read_text()  # the front page opens with the study map and the verdict counts
    assert "study_map.png" in intro and "all papers" in intro and intro.index("study_map.png") < intro.index("<table")


# Python warnings as they print ("Warning: ...", "UserWarning: ...", "TqdmExperimentalWarning: ...") and the
# kernel's own log lines ("[IPKernelApp] WARNING | ...").
WARNING_TEXT = re.compile(r"\b(?:[A-Z]\w*)?Warning: |\[IPKernelApp\] WARNING")


# tqdm's bars as they print ("45%|████▌     | 9/20 [00:01<00:02, 5.1it/s]").
PROGRESS_TEXT = re.compile(r"\d+%\|[^|\n]*\|\s*\d+/\d+|\d+(?:\.\d+)?(?:it|s)/(?:s|it)\]")
FIRST_VERDICT_PX = 1500
# The pages that open with their claims: the five papers' chapters, F-Fidelity's sub-pages, the study's own checks.
CHAPTER_PAGES = {"ffidelity", "fewclass", "saco", "reco_mege", "trace", "basics", "synthesis", "scorecard",
                 *(f"ffidelity/{p}" for p in ("ranking", "variants", "size", "sensitivity", "series_text", "robustness"))}
# In the page at 1400 px: the article column's width, every table wider than it outside a <details> fold, the first
# verdict badge's offset from the top of the page, and the badges whose right edge is beyond the window.
LAYOUT_JS = """() => {
  const art = document.querySelector('article.bd-article') || document.querySelector('main') || document.body;
  const column = art.getBoundingClientRect().width;
  const wide = [];
  for (const t of art.querySelectorAll('table')) {
    if (t.closest('details')) continue;
    if (t.getBoundingClientRect().width > column + 1 || t.scrollWidth > column + 1)
      wide.push([Math.max(t.getBoundingClientRect().width, t.scrollWidth),
                 (t.querySelector('caption') || {}).innerText || t.className]);
  }
  const badges = [...art.querySelectorAll('.fl-badge')];
  const first = badges.length ? badges[0].getBoundingClientRect().top + window.scrollY : null;
  const off = badges.filter(b => !b.closest('details'))
                    .map(b => b.getBoundingClientRect().right).filter(r => r > window.innerWidth);
  return {height: document.documentElement.scrollHeight, column, first_verdict: first, wide, badges_off: off};
}"""


def _saved_pngs(site: Path, page: Path, html: Path) -> list[Path]:
    """The PNG files a page must show: those its notebook saved for an executed-notebook page, the study map that
    the runner drew for the front page (intro), none for another chapter page."""
    rel = page.relative_to(html).with_suffix("")
    if rel == Path("intro"):
        return [site / "book" / "_generated" / f"{study.STUDY_MAP}.png"]
    if rel.parts[:1] != ("_generated",):
        return []
    return sorted((site / "book" / rel).glob("*.png"))


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _local_file(url: str) -> Path | None:
    """The file a ``file:`` URL of the built book points to (None for a web address or a data: URI)."""
    parsed = urlparse(url)
    return Path(unquote(parsed.path)) if parsed.scheme == "file" else None


def _pages(html: Path) -> list[Path]:
    """Every page of the book (the chapters and the executed notebooks), but Sphinx's index/search pages."""
    skip = {"index.html", "genindex.html", "search.html"}
    return sorted(p for p in html.rglob("*.html") if p.name not in skip and "_static" not in p.parts)


@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (make test installs Debian's chromium when it can)")
def test_browser_sees_titles_images_and_working_links(built_book):
    """Every page, chapters and executed notebooks (_generated/...) alike: a title, every image loaded, every local
    href/src an existing file of the built book (and every anchor a present id), no Python warning text nor the
    runner's staging path nor progress-bar text; an executed notebook's page shows each PNG figure its notebook saved
    (the same bytes), and the front page the study map. At a 1400 px window: no table wider than the article's column
    outside a fold, no verdict badge off-screen, and every chapter page (CHAPTER_PAGES) shows its first verdict within
    1,500 px of its top. Each page's height and first verdict's offset are written to _build/browser-layout.csv."""
    from playwright.sync_api import sync_playwright

    html, proc = built_book
    site = html.parents[1]
    assert proc.returncode == 0, "the book did not build"
    pages = _pages(html)
    executed = {str(p.relative_to(html / "_generated").with_suffix("")) for p in pages if "_generated" in p.parts}
    assert executed == set(NOTEBOOKS), f"executed-notebook pages {sorted(executed)} != notebooks {NOTEBOOKS}"
    problems: list[str] = []
    measured: list[dict] = []  # each page's height and first verdict's offset, written beside the built book
    texts: dict[Path, str] = {}  # the pages read for their anchors
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"],
        )
        page = browser.new_page(viewport={"width": 1400, "height": 1500})
        # index.html redirects to the first page of the table of contents.
        page.goto((html / "index.html").as_uri())
        page.wait_for_url("**/intro.html", timeout=10_000)
        if "faithlab" not in page.title():
            problems.append(f"index.html: landing page title is {page.title()!r}")
        for path in pages:
            name = str(path.relative_to(html))
            page.goto(path.as_uri(), wait_until="load")
            if not page.title().strip():
                problems.append(f"{name}: empty title")
            images = page.eval_on_selector_all("img", "els => els.map(e => [e.src, e.naturalWidth])")
            problems += [f"{name}: image did not load: {src}" for src, width in images if width == 0]
            shown = {_digest(f) for f in (_local_file(src) for src, _ in images) if f is not None and f.is_file()}
            missing = [png.name for png in _saved_pngs(site, path, html) if _digest(png) not in shown]
            if missing:
                problems.append(f"{name}: does not show the figure(s) its notebook saved: {missing}")
            text = page.inner_text("body")
            layout = page.evaluate(LAYOUT_JS)
            measured.append({"page": name, "height": layout["height"], "first_verdict": layout["first_verdict"]})
            problems += [f"{name}: table {width:.0f} px wide in a {layout['column']:.0f} px column outside a fold: "
                         f"{what!r:.80}" for width, what in layout["wide"]]
            problems += [f"{name}: a verdict badge ends at {right:.0f} px, off-screen at 1400 px"
                         for right in layout["badges_off"]]
            rel = path.relative_to(html).with_suffix("").as_posix()
            if rel in CHAPTER_PAGES and (layout["first_verdict"] is None or layout["first_verdict"] > FIRST_VERDICT_PX):
                problems.append(f"{name}: first verdict at {layout['first_verdict']} px (must be ≤ {FIRST_VERDICT_PX})")
            if rel.startswith("api/"):  # the API reference documents the runner: it names these texts on purpose
                text = ""
            bar = PROGRESS_TEXT.search(text)
            if bar:
                problems.append(f"{name}: progress-bar text on the page: {bar.group(0)!r}")
            warning = WARNING_TEXT.search(text)
            if warning:
                problems.append(f"{name}: warning text on the page: {warning.group(0)!r}")
            if "/.staging/" in text:  # e.g. a returned artifact path echoed as a cell's result
                problems.append(f"{name}: the runner's staging folder is printed on the page")
            if "{'paper': " in text:  # a claim's row echoed as a cell's result
                problems.append(f"{name}: a claim's raw dict is printed on the page")
            # Every local reference: links, images, scripts, stylesheets, any other src.
            refs = page.eval_on_selector_all(
                "[href], [src]",
                "els => els.map(e => new URL(e.getAttribute('href') ?? e.getAttribute('src'), document.baseURI).href)",
            )
            for ref in refs:
                target = _local_file(ref)
                if target is None:
                    continue
                if not (target.is_file() or (target / "index.html").is_file()):
                    problems.append(f"{name}: broken link {ref}")
                    continue
                if html.resolve() not in target.resolve().parents:
                    problems.append(f"{name}: link outside the built book {ref}")
                fragment = urlparse(ref).fragment
                if fragment and target.suffix == ".html":
                    if target not in texts:
                        texts[target] = target.read_text()
                    if f'id="{fragment}"' not in texts[target] and f'name="{fragment}"' not in texts[target]:
                        problems.append(f"{name}: missing anchor {ref}")
        browser.close()
    import pandas as pd

    report = pd.DataFrame(measured)
    report.to_csv(html.parent / "browser-layout.csv", index=False)
    print(report.to_string(index=False))
    missing = sorted(CHAPTER_PAGES - {m["page"].removesuffix(".html") for m in measured})
    assert not missing, f"chapter pages not built: {missing}"
    assert not problems, "\n".join(problems)
