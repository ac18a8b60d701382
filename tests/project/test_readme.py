"""The README's code runs and its numbers are the library's.

* Every ```python block of README.md, in order, is one script: it runs here as written, in a fresh namespace, in a
  temporary working directory that holds what its paths name (``my_images/``: a few generated PNGs in class
  subfolders; ``my.pt``: a state dict saved with ``torch.save(model.state_dict(), path)``). Only the assignment
  lines of the variables in :data:`SUBSTITUTED` (the reader's model, the number of images held in memory, the
  architecture ReCo/MeGe cross-trains) are replaced, so that the script runs in seconds on a tiny CNN and 14-pixel
  images; every other line, the two paths included, runs exactly as the README prints it.
* Every cost the script's comments state (model inputs per image at 224 px, ResNet-18's input) equals what
  ``fl.evaluation.estimate``, ``selection_cost``, ``anneal_cost`` or the run itself computes.
* Every command of the ```bash blocks and every ``make``/``faithlab``/runner command or flag named in the prose
  exists: make targets and variables in the Makefile (and ``make help`` lists each target), flags in the parsers'
  ``--help``, extras in pyproject.toml, notebooks and scripts on disk; the size of the CUDA wheels stated for the
  slim install is the sum of ``uv.lock``'s.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import faithlab as fl

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")

SUBSTITUTED = {"MODEL": '"small_cnn"', "N_IMAGES": "2", "FOLD_MODEL": '"small_cnn"'}
"""The only lines of the README's script the test replaces (``NAME = value`` at the start of a line)."""

SIZE = 14  # the generated images' side (TRACE's edge=7 divides it) and the tiny CNN's input
CLASSES = {"cat": 3, "dog": 2}  # five images: one per fold of ReCo/MeGe's k = 5


def blocks(lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", README, flags=re.S | re.M)


SCRIPT = "\n".join(blocks("python"))


def number(text: str) -> int:
    return int(text.replace(",", ""))


def comment_of(marker: str) -> str:
    """The comments attached to the statement of the script's line holding ``marker``: the comment lines just above
    it, those on its lines (to the closing parenthesis) and the comment-only lines that follow it, joined."""
    lines = SCRIPT.splitlines()
    hits = [i for i, line in enumerate(lines) if marker in line]
    assert len(hits) == 1, f"the README's script should hold {marker!r} on exactly one line, found {len(hits)}"
    start = end = hits[0]
    while start > 0 and lines[start - 1].lstrip().startswith("#"):
        start -= 1
    depth = 0
    while True:
        code = lines[end].split("#", 1)[0]
        depth += code.count("(") + code.count("[") + code.count("{") - code.count(")") - code.count("]") - \
            code.count("}")
        if depth <= 0:
            break
        end += 1
    while end + 1 < len(lines) and lines[end + 1].lstrip().startswith("#"):
        end += 1
    return " ".join(line.split("#", 1)[1].strip() for line in lines[start:end + 1] if "#" in line)


def stated(marker: str, pattern: str) -> tuple[int, ...]:
    text = comment_of(marker)
    match = re.search(pattern, text)
    assert match, f"the comment of {marker!r} should state /{pattern}/, it reads: {text!r}"
    return tuple(number(g) for g in match.groups())


def assigned(name: str) -> str:
    """The value the README's script assigns to ``name`` (its one top-level assignment), as source text."""
    found = [node for node in ast.parse(SCRIPT).body if isinstance(node, ast.Assign)
             and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)]
    assert len(found) == 1, f"the README's script should assign {name} once, found {len(found)}"
    return ast.get_source_segment(SCRIPT, found[0].value)


# --- the python blocks run ---------------------------------------------------------------------------------------

def substituted(script: str) -> str:
    lines = script.splitlines()
    done = set()
    for i, line in enumerate(lines):
        m = re.match(r"([A-Z_]+) = ", line)
        if m and m.group(1) in SUBSTITUTED:
            assert m.group(1) not in done, f"{m.group(1)} is assigned twice at the start of a line"
            lines[i] = f"{m.group(1)} = {SUBSTITUTED[m.group(1)]}"
            done.add(m.group(1))
    assert done == set(SUBSTITUTED), f"the README's script should assign {sorted(SUBSTITUTED)}, found {sorted(done)}"
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The README's python blocks, run as one script in a folder holding ``my_images/`` and ``my.pt`` → its
    namespace."""
    from PIL import Image

    folder = tmp_path_factory.mktemp("readme")
    rng = np.random.default_rng(0)
    for name, count in CLASSES.items():
        (folder / "my_images" / name).mkdir(parents=True)
        for i in range(count):
            pixels = rng.integers(0, 256, (SIZE, SIZE, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(folder / "my_images" / name / f"{i}.png")
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = fl.models.build(SUBSTITUTED["MODEL"].strip('"'), n_classes=len(CLASSES))
    torch.save(model.state_dict(), folder / "my.pt")
    mp = pytest.MonkeyPatch()
    mp.chdir(folder)
    mp.setenv("FAITHLAB_CACHE", str(folder / "cache"))
    mp.setenv("FAITHLAB_PROGRESS", "0")
    namespace = {"__name__": "__main__"}
    try:
        with warnings.catch_warnings():
            # a random tiny CNN on noise: the hints that a metric is constant across the samples are expected
            warnings.simplefilter("ignore", fl.evaluation.hints.DegenerateResultWarning)
            exec(compile(substituted(SCRIPT), str(ROOT / "README.md"), "exec"), namespace)
    finally:
        mp.undo()
    return namespace


def test_the_substitution_replaces_only_the_named_lines():
    before, after = SCRIPT.splitlines(), substituted(SCRIPT).splitlines()
    changed = [b for b, a in zip(before, after) if b != a]
    assert len(before) == len(after) and len(changed) == len(SUBSTITUTED)
    assert all(re.match(rf"{name} = ", line) for name, line in zip(sorted(SUBSTITUTED), sorted(changed)))
    # the paths stay as printed: the test provides them
    assert assigned("WEIGHTS") == '"my.pt"' and assigned("IMAGES") == '"my_images/"'


def test_the_python_blocks_run_as_one_script(run):
    n_files = sum(CLASSES.values())
    frame = run["frame"]
    assert set(frame["explainer"]) == set(run["explainers"]) == {"IG", "Grad-CAM"}
    assert set(frame["sample"].dropna().astype(int)) == set(range(n_files))  # the whole folder was streamed
    assert run["x"].shape == (int(SUBSTITUTED["N_IMAGES"]), 3, SIZE, SIZE)
    assert isinstance(run["D"], fl.data.TensorData) and len(run["D"]) == n_files
    assert set(run["scores"]) >= {"reco", "mege"}
    assert set(run["report"]["sample"].dropna().astype(int)) == set(range(int(SUBSTITUTED["N_IMAGES"])))


def test_the_k_fold_costs_stated_are_those_of_the_run(run):
    k, trained_on, k_again, epochs, per_image = stated(
        "D = data.tensors()", r"k = (\d+) models of FOLD_MODEL, each trained on (\d+) of the (\d+) folds for "
        r"TrainConfig\(\)'s (\d+) epochs: (\d+) training inputs \(forward and backward\) per image of D")
    family, data = run["family"], run["D"]
    assert family.k == k == k_again == 5
    assert trained_on == k - 1
    assert fl.train.TrainConfig().epochs == epochs
    assert all(len(h["epochs"]) == epochs for h in family.histories)
    assert sum(family.degradation["train_sizes"]) * epochs == per_image * len(data)


# --- the costs stated are the library's, at 224 px ---------------------------------------------------------------

class _Counting(nn.Module):
    """A stand-in model that counts its inputs: logits from the channel means."""

    def __init__(self):
        super().__init__()
        self.fc, self.inputs = nn.Linear(3, 10), 0

    def forward(self, x):
        self.inputs += x.shape[0]
        return self.fc(x.mean(dim=(2, 3)))


@pytest.fixture(scope="module")
def shape():
    """(N, 3, H, W) at the README's size: the input of its model's own preprocessing (ResNet-18: 224 px)."""
    assert assigned("MODEL") == '"torchvision:resnet18"'
    h, w = fl.models.preprocessing("torchvision:resnet18").size
    assert re.search(rf"at {h} px\s+\(ResNet-18's\s+input\)", README)
    return (1000, 3, h, w)


@pytest.fixture(scope="module")
def every_metric(shape):
    """fl.evaluate's work at the README's size with one explainer and an explainer callable → (per-sample model
    inputs by (group, explainer), explained inputs per sample)."""
    table = fl.evaluation.estimate(shape, n_classes=1000, explainers=["IG"], explainer=True)
    per = {(g, e): int(p) for g, e, p in zip(table["group"], table["explainer"], table["per_sample"])}
    explained = int(table["explained_inputs"].sum())
    assert explained % shape[0] == 0
    return per, explained // shape[0]


def test_the_cost_of_every_metric_is_the_estimate(every_metric, shape):
    per, explained = every_metric
    one, two = (1, *shape[1:]), (2, *shape[1:])
    selection = fl.metrics.fewclass.selection_cost(two) - fl.metrics.fewclass.selection_cost(one)
    assert per[("fewclass selection", "all")] == selection
    shared = sum(p for (g, e), p in per.items() if e == "all")
    each = sum(p for (g, e), p in per.items() if e == "IG")
    n_explainers = len(ast.parse(assigned("explainers"), mode="eval").body.keys)
    assert n_explainers == 2
    total, per_explainer, shared_stated = stated("fl.evaluate(model, data.loader(",
                                                 r"([\d,]+) model inputs per image \(([\d,]+) per explainer, "
                                                 r"([\d,]+) shared\)")
    assert (per_explainer, shared_stated) == (each, shared)
    assert total == shared + n_explainers * each
    assert stated("fl.evaluate(model, data.loader(", r"explains ([\d,]+) more inputs per image") == (explained,)
    assert stated("fl.evaluate(model, data.loader(", r"IG spends ([\d,]+) model inputs on each") == \
        stated('attributions = fl.explainers.explain(model, x, y, method="integrated_gradients")',
               r"([\d,]+) model inputs per image")  # which the next test counts
    assert per[("s_avg", "IG")] == 0  # S_avg runs the explainer, not the model
    # the in-memory evaluate: one explainer, no explainer callable (S_avg needs one), the Few-class images given
    # (perturbed=: no search)
    assert 'fl.evaluate(model, x, y, {"IG": attributions}, perturbed=chosen["image"])' in SCRIPT
    assert stated("fl.evaluate(model, x, y,", r"([\d,]+) model inputs per image") == (shared - selection + each,)
    # a metric called alone: its group's count ("~": the call adds its own clean and fully removed passes)
    assert stated("fl.metrics.fewclass_fid(", r"~([\d,]+) model inputs") == (per[("fewclass", "IG")],)
    assert stated("fl.metrics.mu_fidelity(", r"~([\d,]+) model inputs") == (per[("mu_fidelity", "IG")],)


def test_the_cost_of_each_metric_call_is_the_library_s(shape):
    one, two = (1, *shape[1:]), (2, *shape[1:])
    # F-Fidelity's Fid+ with these options: what fl.evaluate counts for FFid+ (the same call on the fine-tuned model)
    options = dict(sparsity=[.1, .2, .3], alpha=.5, beta=.1, n_samples=50)
    assert "sparsity=[.1, .2, .3], alpha=.5, beta=.1,\n" in SCRIPT and "n_samples=50, generator=0)" in SCRIPT
    table = fl.evaluation.estimate(shape, n_classes=1000, metrics=["ffid+"], finetuned=True, **options)
    assert stated("fl.metrics.fid_plus(", r"~([\d,]+) model inputs per image") == (
        int(table.set_index("group").loc["ffid", "per_sample"]),)
    # TRACE's curves on the 7 × 7 grid
    table = fl.evaluation.estimate(shape, n_classes=1000, metrics=["lerf", "morf", "le-mo"], edge=7)
    assert stated("fl.metrics.trace.lerf_morf(", r"~([\d,]+) model inputs per image") == (
        int(table.set_index("group").loc["trace", "per_sample"]),)
    # the annealing, exactly, for the N_IMAGES images
    cost, n = stated("fl.metrics.search.anneal(", r"([\d,]+) model inputs for the (\d+) images")
    assert n == int(assigned("N_IMAGES"))
    assert cost == fl.metrics.search.anneal_cost((n, *shape[1:]), edge=7, generator=0)
    # the Few-class search: the quick grid, the paper's, and the model inputs per image
    best_of, paper, per_image = stated("fl.metrics.select_perturbation(",
                                       r"the best of ([\d,]+) candidate blurs \(the paper's ([\d,]+): "
                                       r"grid=\"paper\"\), ([\d,]+) model inputs per image")
    assert best_of == per_image == fl.metrics.fewclass.selection_cost(two) - fl.metrics.fewclass.selection_cost(one)
    assert paper == len(fl.metrics.fewclass.candidate_grid())
    # integrated gradients: the model inputs per image, counted
    counts = []
    for b in (1, 2):
        model = _Counting().eval()
        fl.explainers.explain(model, torch.rand(b, *shape[1:]), torch.zeros(b, dtype=torch.int64),
                              method="integrated_gradients")
        counts.append(model.inputs)
    assert stated('attributions = fl.explainers.explain(model, x, y, method="integrated_gradients")',
                  r"([\d,]+) model inputs per image") == (counts[1] - counts[0],)


# --- install, make and the command lines ---------------------------------------------------------------------------

MAKEFILE = (ROOT / "Makefile").read_text(encoding="utf-8")
TARGETS = set(re.findall(r"^([A-Za-z][\w.-]*)\s*:(?!=)", MAKEFILE, flags=re.M))
VARIABLES = set(re.findall(r"^([A-Z_]+)\s*[?:]?=", MAKEFILE, flags=re.M))


def commands() -> list[str]:
    """The command lines of the bash blocks (comments dropped) and the commands named in the prose's `code`."""
    out = []
    for block in blocks("bash"):
        for line in block.splitlines():
            line = re.sub(r"(^|\s)#.*$", "", line).strip()
            if line:
                out.append(line)
    prose = re.sub(r"^```.*?^```", "", README, flags=re.S | re.M)
    out += [c for c in re.findall(r"`([^`\n]+)`", prose)
            if re.match(r"(make |faithlab |python -m faithlab|\.venv/bin/)", c)]
    return out


def helps() -> dict[str, str]:
    def text(*args):
        done = subprocess.run([sys.executable, "-m", *args, "--help"], capture_output=True, text=True, cwd=ROOT,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout

    return {"evaluate": text("faithlab", "evaluate"), "run": text("faithlab_study", "run"),
            "list": text("faithlab_study", "list")}


def flags(words: list[str]) -> list[str]:
    return [w.split("=", 1)[0] for w in words if w.startswith("-")]


def accepts(help_text: str, flag: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", help_text) is not None


def script_help(script: Path, monkeypatch, capsys) -> str:
    """``python <script> --help``, run in this process (torch and faithlab are imported already)."""
    import runpy

    with monkeypatch.context() as m:
        m.setattr(sys, "argv", [str(script), "--help"])
        m.setattr(sys, "path", list(sys.path))
        capsys.readouterr()
        with pytest.raises(SystemExit) as exit_:
            runpy.run_path(str(script), run_name="__main__")
    assert exit_.value.code in (0, None)
    return capsys.readouterr().out


def test_every_command_of_the_readme_exists(monkeypatch, capsys):
    import shlex

    from faithlab_study.runner.cli import check_arguments

    monkeypatch.chdir(ROOT)  # the runner finds the notebooks from the working directory
    text = helps()
    seen = set()
    for line in commands():
        words = shlex.split(line)
        if words[0] == "make":
            for w in words[1:]:
                if "=" in w:
                    assert w.split("=", 1)[0] in VARIABLES, f"{line!r}: the Makefile has no variable {w}"
                    if w.startswith("NB="):
                        for nb in w[3:].split():
                            assert (ROOT / "notebooks" / nb).exists() or (ROOT / "notebooks" / f"{nb}.py").exists()
                else:
                    assert w in TARGETS, f"{line!r}: the Makefile has no target {w!r}"
            seen.add("make")
        elif words[:2] in (["faithlab", "evaluate"], [".venv/bin/faithlab", "evaluate"]) or \
                words[:4] == ["python", "-m", "faithlab", "evaluate"]:
            for f in flags(words[words.index("evaluate") + 1:]):
                assert accepts(text["evaluate"], f), f"{line!r}: faithlab evaluate has no option {f}"
            seen.add("evaluate")
        elif words[:3] in (["python", "-m", "faithlab_study"], [".venv/bin/python", "-m", "faithlab_study"]):
            sub = words[3]
            assert sub in ("list", "run"), f"{line!r}: unknown runner command {sub!r}"
            for f in flags(words[4:]):
                assert accepts(text[sub], f), f"{line!r}: python -m faithlab_study {sub} has no option {f}"
            # the notebook names, the -p names (against the notebooks' parameters cells) and the profile, as the
            # runner checks them before it runs anything; --cluster is left out (it would resolve the host)
            argv = words[3:]
            if "--cluster" in argv:
                i = argv.index("--cluster")
                argv = argv[:i] + argv[i + 2:]
            check_arguments(argv)
            seen.add("study")
        elif words[0] == ".venv/bin/python" and words[1].endswith(".py"):
            script = ROOT / words[1]
            assert script.is_file(), f"{line!r}: no file {words[1]}"
            usage = script_help(script, monkeypatch, capsys)
            for f in flags(words[2:]):
                assert accepts(usage, f), f"{line!r}: {words[1]} has no option {f}"
            seen.add("script")
        elif words[:2] == ["python", "-m"] and words[2].startswith(("faithlab.", "faithlab_study.")) and len(words) == 3:
            # a module run as a script without arguments (the rules audit): it must exist and have a __main__
            import importlib.util

            assert importlib.util.find_spec(f"{words[2]}.__main__") is not None, f"{line!r}: no {words[2]}.__main__"
            seen.add("module")
        elif words[:2] == ["pip", "install"]:
            for w in words[2:]:
                if w.startswith("."):
                    # the library (.) or the study (./lib/faithlab-study), each with its own extras
                    m = re.fullmatch(r"(\.|\./lib/faithlab-study)(?:\[([\w,-]+)\])?", w)
                    assert m, f"{line!r}: {w!r} is not a path to this project's distributions"
                    theirs = tomllib.loads((ROOT / m.group(1) / "pyproject.toml").read_text(encoding="utf-8"))[
                        "project"].get("optional-dependencies", {})
                    for extra in (m.group(2) or "").split(","):
                        assert not extra or extra in theirs, f"{line!r}: {m.group(1)} has no extra {extra!r}"
                elif w.startswith("-"):
                    assert w in ("--index-url",), f"{line!r}: unexpected pip option {w}"
                else:
                    assert w in ("torch", "torchvision") or w.startswith("https://download.pytorch.org/whl/"), w
            seen.add("pip")
        else:
            raise AssertionError(f"the README names a command this test does not know how to check: {line!r}")
    assert seen == {"make", "evaluate", "study", "script", "pip", "module"}
    # the flags the prose lists for faithlab evaluate
    paragraph = README.split("--estimate-only", 1)[0].rsplit("\n\n", 1)[1] + README.split("--estimate-only", 1)[1]
    paragraph = paragraph.split("\n\n", 1)[0]
    listed = re.findall(r"`(--[\w-]+)", paragraph) + ["--estimate-only"]
    assert len(listed) >= 7
    for f in listed:
        assert accepts(text["evaluate"], f), f"the README lists {f}, which faithlab evaluate does not accept"


def test_make_help_lists_every_target_the_readme_names():
    import shlex

    done = subprocess.run(["make", "--no-print-directory", "-s", "help"], capture_output=True, text=True, cwd=ROOT,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    named = {w for line in commands() if line.startswith("make ") for w in shlex.split(line)[1:] if "=" not in w}
    assert {"setup", "book", "test", "notebooks", "html", "paper-dry"} <= named
    for target in named - {"help"}:
        assert re.search(rf"^make {re.escape(target)}\b", done.stdout, flags=re.M), f"make help omits make {target}"
    # what the README says make setup does is what the Makefile's recipe does, and book and test run it first
    assert ("$(UV) sync --locked --all-extras --all-packages" in MAKEFILE
            and "`uv sync --locked --all-extras --all-packages`" in README)
    assert re.search(r"^setup: \$\(VENV\)/\.synced$", MAKEFILE, flags=re.M)
    for target in ("book", "test"):
        assert re.search(rf"^{target}: setup\b", MAKEFILE, flags=re.M), f"make {target} does not run make setup first"


def test_the_slim_install_names_the_cuda_wheels_it_avoids():
    """The README's size of the CUDA wheels a default Linux install of torch pulls is uv.lock's (x86-64, this
    Python), and it points to PyTorch's own instructions for the CPU-only build."""
    lock = tomllib.loads((ROOT / "uv.lock").read_text(encoding="utf-8"))
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    total = 0
    for package in lock["package"]:
        if package["name"].startswith(("nvidia-", "cuda-")) or package["name"] == "triton":
            wheels = [w for w in package.get("wheels", []) if "manylinux" in w["url"] and "x86_64" in w["url"]]
            wheels = [w for w in wheels if f"-{tag}-" in w["url"]] or [w for w in wheels if "-py3-" in w["url"]]
            total += wheels[0]["size"] if wheels else 0
    match = re.search(r"about ([\d.]+) GB of CUDA\s+wheels", README)
    assert match, "the README should state the size of the CUDA wheels the slim install avoids"
    assert float(match.group(1)) == round(total / 1e9, 1)
    assert "https://pytorch.org/get-started/locally/" in README
