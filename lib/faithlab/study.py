"""Run the study's notebooks: jupytext sources → papermill → executed notebooks and artifacts for the book.

Usage (from the repository root)::

    python -m faithlab.study list
    python -m faithlab.study run --profile book -j 2
    python -m faithlab.study run basics/digits_classifier --profile smoke -p n_epochs 3
    python -m faithlab.study scorecard

Each notebook ``notebooks/<paper>/<experiment>.py`` (jupytext py:percent, exactly one cell tagged ``parameters``)
is executed with parameters merged from, lowest to highest priority: its own parameters cell, the profile file
``notebooks/params/<profile>.yaml`` (``defaults`` for every notebook that defines the name, then ``notebooks:
{<paper>/<experiment>: {...}}``), and ``-p name value`` on the command line. Outputs go to
``book/_generated/<paper>/<experiment>.ipynb`` and ``book/_generated/<paper>/<experiment>/`` (tables, figures,
claims). A run is skipped when the stamp of the last successful run matches the hash of (notebook source, merged
parameters, library source, uv.lock). Outputs are written to a staging folder and moved into place only on
success; a failed run removes the old outputs (no stale page) and keeps the executed notebook with the traceback
under ``_build/failed/``.
"""

from __future__ import annotations

import argparse
import concurrent.futures as futures
import hashlib
import json
import os
import shutil
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from faithlab import paths

PROFILES = ("smoke", "book", "paper")
STAMP = ".stamp.json"
CLAIMS = "claims.csv"
SCORECARD = "scorecard.csv"
CLAIM_COLUMNS = ("paper", "experiment", "claim", "paper_value", "our_value", "verdict", "note")


class StudyError(RuntimeError):
    """A notebook could not be found, configured or executed."""


@dataclass(frozen=True)
class Notebook:
    """One notebook of the study: ``notebooks/<paper>/<experiment>.py``."""

    paper: str
    experiment: str
    source: Path
    defaults: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def name(self) -> str:
        return f"{self.paper}/{self.experiment}"


# --------------------------------------------------------------------------------------------------- discovery


def notebooks_dir(root: Path | None = None) -> Path:
    return (root or paths.project_root()) / "notebooks"


def _parameters_cell(source: Path) -> dict:
    """Parse a jupytext py:percent file and return the default values of its single ``parameters`` cell."""
    import jupytext

    nb = jupytext.read(source, fmt="py:percent")
    cells = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(cells) != 1:
        raise StudyError(f"{source}: expected exactly one cell tagged 'parameters', found {len(cells)}")
    namespace: dict = {}
    try:
        exec(compile(cells[0].source, f"{source}:parameters", "exec"), {}, namespace)  # noqa: S102 (our own file)
    except Exception as exc:  # the cell must be plain assignments of literals
        raise StudyError(f"{source}: the parameters cell must only assign plain values ({exc})") from exc
    return {k: v for k, v in namespace.items() if not k.startswith("_")}


def discover(root: Path | None = None) -> list[Notebook]:
    """All notebooks under ``notebooks/<paper>/<experiment>.py``, sorted by name."""
    base = notebooks_dir(root)
    found = []
    for source in sorted(base.glob("*/*.py")):
        if source.parent.name in {"params", "__pycache__"} or source.name.startswith("_"):
            continue
        found.append(Notebook(source.parent.name, source.stem, source, _parameters_cell(source)))
    return found


def select(notebooks: list[Notebook], selectors: list[str]) -> list[Notebook]:
    """Keep notebooks named ``paper/experiment`` or belonging to ``paper``; unknown selectors raise."""
    if not selectors:
        return notebooks
    chosen = []
    for sel in selectors:
        sel = sel.strip("/").removesuffix(".py").removeprefix("notebooks/")
        hits = [nb for nb in notebooks if nb.name == sel or nb.paper == sel]
        if not hits:
            names = ", ".join(nb.name for nb in notebooks)
            raise StudyError(f"no notebook matches {sel!r}; known notebooks: {names}")
        chosen.extend(nb for nb in hits if nb not in chosen)
    return chosen


# --------------------------------------------------------------------------------------------------- parameters


def load_profile(profile: str, root: Path | None = None) -> dict:
    """Read ``notebooks/params/<profile>.yaml`` → {'defaults': {...}, 'notebooks': {name: {...}}}."""
    if profile not in PROFILES:
        raise StudyError(f"profile must be one of {PROFILES}, got {profile!r}")
    path = notebooks_dir(root) / "params" / f"{profile}.yaml"
    if not path.is_file():
        raise StudyError(f"profile file {path} is missing")
    data = yaml.safe_load(path.read_text()) or {}
    unknown = set(data) - {"defaults", "notebooks"}
    if unknown:
        raise StudyError(f"{path}: unknown top-level keys {sorted(unknown)} (expected 'defaults', 'notebooks')")
    return {"defaults": data.get("defaults") or {}, "notebooks": data.get("notebooks") or {}}


def parse_overrides(pairs: list[tuple[str, str]] | None) -> dict:
    """``-p name value`` pairs → dict; values are parsed as YAML (``3`` → int, ``[1, 2]`` → list)."""
    return {name: yaml.safe_load(value) for name, value in (pairs or [])}


def merge_parameters(nb: Notebook, profile: str, spec: dict, overrides: dict) -> dict:
    """Parameters for one run: notebook defaults < profile defaults < profile per-notebook < command line.

    Profile ``defaults`` apply only to names the notebook defines; per-notebook and command-line names must exist
    in the notebook's parameters cell (typos fail loudly).
    """
    params = dict(nb.defaults)
    params.update({k: v for k, v in spec["defaults"].items() if k in nb.defaults})
    per_nb = spec["notebooks"].get(nb.name) or {}
    unknown = set(per_nb) - set(nb.defaults)
    if unknown:
        raise StudyError(f"profile {profile!r} sets {sorted(unknown)} for {nb.name}, which has no such parameter")
    params.update(per_nb)
    params.update({k: v for k, v in overrides.items() if k in nb.defaults})
    if "profile" in nb.defaults:
        params["profile"] = profile
    return params


# --------------------------------------------------------------------------------------------------- stamps


def _hash_files(files) -> str:
    digest = hashlib.sha256()
    for f in sorted(files):
        digest.update(str(f.name).encode())
        digest.update(f.read_bytes())
    return digest.hexdigest()


def library_hash() -> str:
    """Hash of the library's source files (a change in lib re-runs every notebook)."""
    return _hash_files(Path(__file__).parent.rglob("*.py"))


def run_key(nb: Notebook, params: dict, lib_hash: str, root: Path) -> str:
    lock = root / "uv.lock"
    payload = {
        "source": hashlib.sha256(nb.source.read_bytes()).hexdigest(),
        "params": params,
        "lib": lib_hash,
        "lock": hashlib.sha256(lock.read_bytes()).hexdigest() if lock.is_file() else None,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def output_paths(nb: Notebook, generated: Path) -> tuple[Path, Path]:
    """(executed notebook, artifact folder) of a notebook."""
    return generated / nb.paper / f"{nb.experiment}.ipynb", generated / nb.paper / nb.experiment


def is_current(nb: Notebook, key: str, generated: Path) -> bool:
    ipynb, folder = output_paths(nb, generated)
    stamp = folder / STAMP
    if not (ipynb.is_file() and stamp.is_file()):
        return False
    try:
        return json.loads(stamp.read_text()).get("key") == key
    except json.JSONDecodeError:
        return False


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


# --------------------------------------------------------------------------------------------------- execution


# Run in each kernel before the notebook's first cell (IPython's exec_lines, hidden from the user namespace).
# tqdm.auto (imported by captum and huggingface_hub, hence by faithlab.explainers and timm) prints a notice the
# first time it is imported in a Jupyter kernel: "IProgress not found" without ipywidgets, "Using
# `tqdm.autonotebook.tqdm` in notebook mode" (TqdmExperimentalWarning) with them. Neither is about our results
# (faithlab never shows those libraries' progress bars, and a static page could not show a widget anyway), so the
# runner's kernels ignore exactly these two tqdm messages; every other warning still prints in the notebook.
KERNEL_STARTUP = (
    "import warnings as _fl_warnings, tqdm as _fl_tqdm; "
    "_fl_warnings.filterwarnings('ignore', category=_fl_tqdm.TqdmWarning, "
    "message=r'IProgress not found|Using `tqdm\\.autonotebook\\.tqdm` in notebook mode'); "
    "del _fl_warnings, _fl_tqdm"
)


def kernel_options() -> dict:
    """papermill/nbclient options for the kernels the runner starts.

    A kernel reached over TCP without transport encryption logs "[IPKernelApp] WARNING | Kernel is running over
    TCP without encryption" on every start. The kernel manager provisions CurveZMQ keys instead when pyzmq has
    Curve and the kernelspec declares it (ipykernel's does): the kernel's sockets are then encrypted and it has
    nothing to warn about, while any other kernel warning still reaches the runner's terminal. Only without Curve
    support does the runner fall back to keeping the kernel's log at errors.
    """
    import zmq
    from jupyter_client.manager import KernelManager
    from traitlets.config import Config

    options: dict = {"extra_arguments": [f"--IPKernelApp.exec_lines={KERNEL_STARTUP}"]}
    if zmq.has("curve") and KernelManager.class_traits().get("transport_encryption") is not None:
        options["config"] = Config({"KernelManager": {"transport_encryption": "auto"}})
    else:
        options["extra_arguments"].append("--IPKernelApp.log_level=ERROR")
    return options


@dataclass
class Result:
    name: str
    status: str  # "ran", "cached", "failed"
    seconds: float = 0.0
    message: str = ""


def execute(nb: Notebook, params: dict, key: str, root: Path, generated: Path, timeout: int) -> Result:
    """Execute one notebook with papermill into a staging folder; move outputs into place only on success."""
    import jupytext
    import nbformat
    import papermill

    start = time.monotonic()
    ipynb, folder = output_paths(nb, generated)
    staging = generated / ".staging" / f"{nb.paper}--{nb.experiment}--{uuid.uuid4().hex[:8]}"
    staged_folder = staging / nb.experiment
    staged_folder.mkdir(parents=True)
    source_ipynb = staging / "source.ipynb"
    staged_ipynb = staging / f"{nb.experiment}.ipynb"
    source_nb = jupytext.read(nb.source, fmt="py:percent")
    source_nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    source_nb.metadata.setdefault("language_info", {"name": "python"})
    nbformat.write(source_nb, source_ipynb)

    env_backup = {k: os.environ.get(k) for k in ("FAITHLAB_OUTPUT_DIR", "FAITHLAB_NOTEBOOK", "FAITHLAB_ROOT")}
    os.environ.update(FAITHLAB_OUTPUT_DIR=str(staged_folder), FAITHLAB_NOTEBOOK=nb.name, FAITHLAB_ROOT=str(root))
    os.environ.setdefault("MPLBACKEND", "Agg")
    try:
        papermill.execute_notebook(
            str(source_ipynb),
            str(staged_ipynb),
            parameters=params,
            kernel_name="python3",
            language="python",
            cwd=str(root),
            execution_timeout=timeout,
            progress_bar=False,
            log_output=False,
            **kernel_options(),
        )
    except Exception as exc:  # papermill raises PapermillExecutionError with the cell's traceback
        failed = root / "_build" / "failed" / nb.paper / f"{nb.experiment}.ipynb"
        failed.parent.mkdir(parents=True, exist_ok=True)
        if staged_ipynb.is_file():
            shutil.copyfile(staged_ipynb, failed)
            where = f"traceback in {failed}"
        else:
            where = "the notebook did not start (see the message above)"
        # No stale page: the previous outputs of this notebook no longer describe its source.
        _remove(ipynb)
        _remove(folder)
        shutil.rmtree(staging, ignore_errors=True)
        summary = str(exc).strip().splitlines()
        detail = next((line for line in reversed(summary) if line.strip()), type(exc).__name__)
        return Result(nb.name, "failed", time.monotonic() - start, f"{detail}\n    {where}")
    finally:
        for k, v in env_backup.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    (staged_folder / STAMP).write_text(json.dumps({"key": key, "params": params}, sort_keys=True, default=str))
    ipynb.parent.mkdir(parents=True, exist_ok=True)
    # Replace old outputs: rename the old ones away first, then rename the new ones in (same filesystem).
    trash = staging / "old"
    trash.mkdir()
    if ipynb.exists():
        os.replace(ipynb, trash / ipynb.name)
    if folder.exists():
        os.replace(folder, trash / folder.name)
    os.replace(staged_folder, folder)
    os.replace(staged_ipynb, ipynb)
    shutil.rmtree(staging, ignore_errors=True)
    return Result(nb.name, "ran", time.monotonic() - start)


def _execute_job(args) -> Result:
    return execute(*args)


def run(
    selectors: list[str] | None = None,
    profile: str = "book",
    overrides: dict | None = None,
    jobs: int = 1,
    force: bool = False,
    timeout: int = 3600,
    root: Path | None = None,
    generated: Path | None = None,
    echo=print,
) -> list[Result]:
    """Execute the selected notebooks (all by default) with a profile; return one Result per notebook."""
    root = Path(root or paths.project_root()).resolve()
    generated = Path(generated or paths.generated_dir()).resolve()
    overrides = overrides or {}
    notebooks = select(discover(root), selectors or [])
    if overrides:
        used = set().union(*(nb.defaults for nb in notebooks)) if notebooks else set()
        unknown = set(overrides) - used
        if unknown:
            raise StudyError(f"-p {sorted(unknown)}: no selected notebook has such a parameter")
    spec = load_profile(profile, root)
    unknown_nbs = set(spec["notebooks"]) - {nb.name for nb in discover(root)}
    if unknown_nbs:
        raise StudyError(f"profile {profile!r} names unknown notebooks {sorted(unknown_nbs)}")
    lib_hash = library_hash()

    results: list[Result] = []
    todo = []
    for nb in notebooks:
        params = merge_parameters(nb, profile, spec, overrides)
        key = run_key(nb, params, lib_hash, root)
        if not force and is_current(nb, key, generated):
            results.append(Result(nb.name, "cached"))
            echo(f"[cached] {nb.name}")
        else:
            todo.append((nb, params, key, root, generated, timeout))

    total = len(todo)
    if total:
        echo(f"executing {total} notebook(s) with profile {profile!r} ({jobs} in parallel)")
    done = 0
    if jobs > 1 and total > 1:
        import multiprocessing

        # Parallel notebooks share the cores: one kernel's torch threads must not oversubscribe the others'.
        threads = os.environ.get("OMP_NUM_THREADS")
        os.environ["OMP_NUM_THREADS"] = threads or str(max(1, (os.cpu_count() or 1) // jobs))
        try:
            with futures.ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
                pending = {pool.submit(_execute_job, job): job[0].name for job in todo}
                for future in futures.as_completed(pending):
                    done += 1
                    results.append(_report(future.result(), done, total, echo))
        finally:
            if threads is None:
                os.environ.pop("OMP_NUM_THREADS")
    else:
        for job in todo:
            echo(f"[{done + 1}/{total}] {job[0].name} ...")
            done += 1
            results.append(_report(execute(*job), done, total, echo))
    shutil.rmtree(generated / ".staging", ignore_errors=True)
    write_scorecard(generated)
    return results


def _report(result: Result, done: int, total: int, echo) -> Result:
    if result.status == "failed":
        echo(f"[{done}/{total}] FAILED {result.name} after {result.seconds:.1f} s: {result.message}")
    else:
        echo(f"[{done}/{total}] done {result.name} in {result.seconds:.1f} s")
    return result


# --------------------------------------------------------------------------------------------------- scorecard


def write_scorecard(generated: Path | None = None) -> Path:
    """Collect every notebook's ``claims.csv`` into ``book/_generated/scorecard.csv`` (atomically)."""
    import pandas as pd

    generated = Path(generated or paths.generated_dir())
    generated.mkdir(parents=True, exist_ok=True)
    frames = [pd.read_csv(p) for p in sorted(generated.glob(f"*/*/{CLAIMS}"))]
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(CLAIM_COLUMNS))
    table = table.sort_values(["paper", "experiment", "claim"], kind="stable")
    target = generated / SCORECARD
    tmp = target.with_suffix(".csv.tmp")
    table.to_csv(tmp, index=False)
    os.replace(tmp, target)
    return target


# --------------------------------------------------------------------------------------------------- CLI


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m faithlab.study", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list the notebooks and their parameters")
    run_p = sub.add_parser("run", help="execute notebooks (all by default)")
    run_p.add_argument("notebooks", nargs="*", help="paper or paper/experiment names (default: all)")
    run_p.add_argument("--profile", default="book", choices=PROFILES)
    run_p.add_argument("-p", "--parameter", nargs=2, action="append", metavar=("NAME", "VALUE"), dest="params")
    run_p.add_argument("-j", "--jobs", type=int, default=1, help="notebooks executed in parallel processes")
    run_p.add_argument("--force", action="store_true", help="execute even when the stamp matches")
    run_p.add_argument("--timeout", type=int, default=3600, help="seconds allowed per cell")
    sub.add_parser("scorecard", help="rebuild book/_generated/scorecard.csv from the notebooks' claims")
    args = parser.parse_args(argv)

    try:
        if args.command == "list":
            for nb in discover():
                print(f"{nb.name}: {nb.defaults}")
            return 0
        if args.command == "scorecard":
            print(write_scorecard())
            return 0
        if args.jobs < 1:
            parser.error("-j/--jobs must be a positive integer")
        results = run(args.notebooks, args.profile, parse_overrides(args.params), args.jobs, args.force, args.timeout)
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


if __name__ == "__main__":
    sys.exit(main())
