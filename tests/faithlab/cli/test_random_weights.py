"""``faithlab evaluate --random-weights`` is repeatable: the model's random initialisation is drawn from ``--seed``
(the process's own random state untouched), so two identical runs write the same report, byte for byte but for
the times it measures and the moment it was written; the report and the command's echo say which seed drew the
weights; ``--resume`` of such a run resumes the same model and refuses another seed, naming --resume."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
import torch

from cli_runs import class_folder

import faithlab as fl
from faithlab import cli
from faithlab.evaluation import checkpoint as checkpoints

# four 16 x 16 images in chunks of two: an interruption after the first chunk leaves one to resume; μF and 'random'
# draw from the seed too, the sanity check randomises the model with it, one map figure
ARGS = ["--model", "small_cnn", "--random-weights", "--size", "16", "--explainers", "saliency,random", "--metrics",
        "aopc,mu_fidelity", "--set", "n_subsets=4", "--batch-size", "2", "--maps", "1", "--yes", "--out", "report"]


@pytest.fixture(scope="module")
def images(tmp_path_factory) -> Path:
    """images/{a,b}/*.png: two 16 x 16 images per class."""
    return class_folder(tmp_path_factory.mktemp("random-weights") / "images", per_class=2)


def _args(images: Path, *extra: str) -> list[str]:
    """The command, with ``--out report`` relative to the working folder: two runs in two folders are the same
    command (the page shows it)."""
    return ["evaluate", "--images", str(images), *ARGS, *extra]


def _run(folder: Path, args: list[str]) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)
        return cli.main(args)


@pytest.fixture(scope="module")
def baseline(images, tmp_path_factory) -> Path:
    """The report of one uninterrupted run, seed 0."""
    folder = tmp_path_factory.mktemp("baseline")
    assert _run(folder, _args(images)) == 0
    return folder / "report"


TIMED = {"cost.csv": lambda c: "ms" in c or "second" in c, "estimate.csv": lambda c: "seconds" in c}
"""The report's files that hold measured times, and their time columns: every other column is compared."""


def _page(path: Path, resumed: bool) -> str:
    """index.html without what differs between two runs of the same command: the moment it was written and the
    measured times of its cost table (and, for a ``resumed`` run, its --resume, in the command and the
    parameters)."""
    page = re.sub(r"written \d{4}-\d\d-\d\dT[\d:]+;", "written <when>;", path.read_text(encoding="utf-8"))
    if resumed:
        page = re.sub(r"(<td class=text>resume</td>\s*<td class=text>)True", r"\1False",
                      page.replace(" --resume</pre>", "</pre>"))
    return re.sub(r"(<h2>Cost per image and explainer</h2>).*?(<h2>)", r"\1<times>\2", page, flags=re.S)


def _same_report(folder: Path, other: Path, resumed: bool = False) -> None:
    """Every file of the two reports equal byte for byte, but for the measured times and the moment of writing."""
    names = sorted(p.name for p in folder.iterdir())
    assert names == sorted(p.name for p in other.iterdir())
    assert {"report.csv", "summary.csv", "sanity.csv", "ranks.png", "maps_0.png", "index.html"} <= set(names)
    for name in names:
        if name in TIMED:
            mine, theirs = pd.read_csv(folder / name), pd.read_csv(other / name)
            kept = [c for c in theirs.columns if not TIMED[name](c)]
            assert len(kept) >= 3, name
            pd.testing.assert_frame_equal(mine[kept], theirs[kept])
        elif name == "index.html":
            assert _page(folder / name, resumed) == _page(other / name, False)
        else:
            assert (folder / name).read_bytes() == (other / name).read_bytes(), name


def test_two_identical_runs_write_the_same_report(images, baseline, tmp_path, capsys):
    assert _run(tmp_path, _args(images)) == 0
    printed = capsys.readouterr().out
    assert "model: small_cnn (random weights drawn from --seed 0)" in printed
    _same_report(tmp_path / "report", baseline)
    page = (baseline / "index.html").read_text(encoding="utf-8")
    assert "Model: small_cnn, random weights drawn from --seed 0." in page
    assert "True (random weights drawn from --seed 0)" in page  # the parameters table


def test_the_weights_are_drawn_from_seed_and_leave_the_global_rng_alone(images):
    def loaded(seed: int) -> torch.nn.Module:
        args = cli.arguments.build_parser().parse_args(_args(images, "--seed", str(seed)))
        return cli.loading.load(args, lambda _text: None)[0]

    torch.manual_seed(123)
    before = torch.get_rng_state()
    model = loaded(0)
    assert torch.equal(torch.get_rng_state(), before)  # the process's random state is as it was
    torch.manual_seed(0)
    expected = fl.models.load("small_cnn")
    for (name, got), want in zip(model.state_dict().items(), expected.state_dict().values()):
        assert torch.equal(got, want), name
    again, other = loaded(0).state_dict(), loaded(1).state_dict()
    assert all(torch.equal(again[k], v) for k, v in model.state_dict().items())
    assert any(not torch.equal(other[k], v) for k, v in model.state_dict().items() if v.is_floating_point())


def test_resume_continues_the_same_model_and_refuses_another_seed(images, baseline, tmp_path, monkeypatch, capsys):
    save, saved, armed = checkpoints.Checkpoint.save, [], [True]

    def interrupting(checkpoint, *rest):
        save(checkpoint, *rest)
        saved.append(checkpoint.folder.name)
        if armed[0]:  # Ctrl-C once the first chunk is kept
            armed[0] = False
            raise KeyboardInterrupt

    monkeypatch.setattr(checkpoints.Checkpoint, "save", interrupting)
    work = tmp_path / "report.partial"
    assert _run(tmp_path, _args(images)) == 130
    assert work.is_dir() and not (tmp_path / "report").exists()
    capsys.readouterr()

    assert _run(tmp_path, _args(images, "--resume", "--seed", "1")) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert err.startswith("faithlab evaluate: error: --resume: ") and "--seed (was 0, now 1)" in err
    assert "model weights" in err and work.is_dir()  # the interrupted run is kept for the right seed

    saved.clear()
    assert _run(tmp_path, _args(images, "--resume")) == 0
    assert "resuming the interrupted run" in capsys.readouterr().out
    assert saved[0] == "evaluate" and len(saved) == 3  # one chunk of the evaluation left, two of the sanity check
    _same_report(tmp_path / "report", baseline, resumed=True)
    assert not work.exists()
