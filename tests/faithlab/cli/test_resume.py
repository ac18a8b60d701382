"""``faithlab evaluate --resume`` (issue 54): the command keeps each finished chunk in ``<out>.partial/`` as it goes
(``fl.evaluate(checkpoint=)``); after Ctrl-C, at a chunk boundary or inside a forward pass, ``--resume`` computes only
the unfinished chunks (the sanity check's too) and writes the report of an uninterrupted run, byte for byte; a
changed argument is refused naming --resume and what differs; the old report stays until the resumed run completes;
without --resume a leftover run is named and replaced."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

import faithlab as fl
from faithlab import cli
from faithlab.evaluation import checkpoint as checkpoints
from faithlab.models.cnn import SmallCNN

# μF draws random subsets keyed to the sample and 'random' draws keyed maps: a resumed run must draw the same
ARGS = ["--model", "small_cnn", "--size", "16", "--explainers", "saliency,random", "--metrics", "aopc,mu_fidelity",
        "--batch-size", "2", "--maps", "0", "--yes", "--set", "n_subsets=4"]  # six images in batches of two: three
# chunks, and three in the sanity check


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """weights.pt (a random small CNN, two classes) and images/{a,b}/*.png (three 16 x 16 images each)."""
    from PIL import Image

    tmp = tmp_path_factory.mktemp("resume")
    torch.manual_seed(0)
    torch.save(fl.models.build("small_cnn", n_classes=2).state_dict(), tmp / "weights.pt")
    rng = np.random.default_rng(0)
    for cls in "ab":
        (tmp / "images" / cls).mkdir(parents=True)
        for i in range(3):
            Image.fromarray(rng.integers(0, 256, (16, 16, 3), dtype=np.uint8)).save(tmp / "images" / cls / f"{i}.png")
    return tmp


def _args(inputs: Path, out: Path, *extra: str) -> list[str]:
    return ["evaluate", "--weights", str(inputs / "weights.pt"), "--images", str(inputs / "images"), "--out",
            str(out), *ARGS, *extra]


@pytest.fixture(scope="module")
def baseline(inputs):
    """The report of an uninterrupted run."""
    assert cli.main(_args(inputs, inputs / "baseline")) == 0
    assert not (inputs / "baseline.partial").exists()  # the chunks are dropped once the run is complete
    return inputs / "baseline"


class Spy:
    """Records the chunks each run computes and keeps ((part, first sample): part "evaluate" or "sanity"), and
    raises KeyboardInterrupt once ``at_save`` chunks are kept, or inside the ``forward``-th forward pass of the
    model after ``after`` chunks are kept."""

    def __init__(self, monkeypatch):
        self.saved: list[tuple[str, int]] = []
        self.arm()
        save, forward = checkpoints.Checkpoint.save, SmallCNN.forward

        def spy_save(checkpoint, c, *rest):
            save(checkpoint, c, *rest)
            self.saved.append((checkpoint.folder.name, int(c.index[0])))
            if len(self.saved) == self.at_save:
                raise KeyboardInterrupt

        def spy_forward(model, x):
            if self.at_forward is not None and len(self.saved) >= self.at_forward[0]:
                self.forwards += 1
                if self.forwards == self.at_forward[1]:
                    raise KeyboardInterrupt
            return forward(model, x)

        monkeypatch.setattr(checkpoints.Checkpoint, "save", spy_save)
        monkeypatch.setattr(SmallCNN, "forward", spy_forward)

    def arm(self, at_save: int | None = None, at_forward: tuple[int, int] | None = None) -> None:
        self.saved.clear()
        self.at_save, self.at_forward, self.forwards = at_save, at_forward, 0


@pytest.fixture
def spy(monkeypatch):
    return Spy(monkeypatch)


def _hints(folder: Path) -> str:
    page = (folder / "index.html").read_text(encoding="utf-8")
    return re.search(r"<h2>Hints and warnings</h2>.*?</ul>", page, re.S).group(0)


def _same_report(folder: Path, baseline: Path) -> None:
    """Every score and table equal to the uninterrupted run's, byte for byte (cost: all but the seconds)."""
    for name in ("report", "summary", "ranks", "sanity"):
        assert (folder / f"{name}.csv").read_bytes() == (baseline / f"{name}.csv").read_bytes(), name
    cost, base = pd.read_csv(folder / "cost.csv"), pd.read_csv(baseline / "cost.csv")
    counts = [c for c in base.columns if "ms" not in c and "second" not in c]
    assert len(counts) >= 3
    pd.testing.assert_frame_equal(cost[counts], base[counts])
    assert _hints(folder) == _hints(baseline)


def _chunks(work: Path, part: str) -> list[str]:
    return sorted(p.name for p in (work / part).glob("chunk-*.json"))


def test_interrupted_at_a_chunk_boundary_resumes_to_the_same_report(inputs, baseline, tmp_path, spy, capsys):
    out, work = tmp_path / "report", tmp_path / "report.partial"
    out.mkdir()
    previous = {"index.html": "<html>the previous report</html>", "report.csv": "sample\n", "old.txt": "its notes"}
    for name, text in previous.items():  # an earlier report (index.html, report.csv): the only folder replaced
        (out / name).write_text(text)
    spy.arm(at_save=1)  # Ctrl-C once the first chunk is kept
    assert cli.main(_args(inputs, out)) == 130
    err = capsys.readouterr().err
    assert f"kept in {work}: run the same command with --resume" in err and "interrupted" in err
    marker = json.loads((work / "incomplete.json").read_text(encoding="utf-8"))
    assert marker["incomplete"] is True and marker["fingerprint"]["--seed"] == 0
    assert _chunks(work, "evaluate") == ["chunk-0-2.json"]
    assert {p.name: p.read_text() for p in out.iterdir()} == previous  # the old report is untouched

    spy.arm(at_save=3)  # resumed, then Ctrl-C again once the sanity check kept its first chunk
    assert cli.main(_args(inputs, out, "--resume")) == 130
    assert spy.saved == [("evaluate", 2), ("evaluate", 4), ("sanity", 0)]  # chunk 0 read back, not computed
    assert "resuming the interrupted run" in capsys.readouterr().out
    assert {p.name: p.read_text() for p in out.iterdir()} == previous  # still the old report

    spy.arm()
    assert cli.main(_args(inputs, out, "--resume")) == 0
    assert spy.saved == [("sanity", 2), ("sanity", 4)]  # the sanity check resumes chunk by chunk too
    _same_report(out, baseline)
    assert not (out / "old.txt").exists() and not work.exists()


def test_interrupted_inside_a_forward_pass_resumes_and_a_changed_argument_is_refused(inputs, baseline, tmp_path,
                                                                                     spy, capsys, monkeypatch):
    out, work = tmp_path / "report", tmp_path / "report.partial"
    spy.arm(at_forward=(1, 3))  # the third forward pass of chunk 2
    assert cli.main(_args(inputs, out)) == 130
    assert spy.saved == [("evaluate", 0)] and spy.forwards == 3 and not out.exists()
    capsys.readouterr()

    assert cli.main(_args(inputs, out, "--resume", "--seed", "1")) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("faithlab evaluate: error: --resume:") and "\n" not in err, err
    assert "--seed (was 0, now 1)" in err and "without --resume to start over" in err
    assert _chunks(work, "evaluate") == ["chunk-0-2.json"] and not out.exists()  # refused: nothing changed
    # what the command's fingerprint would miss, the chunks' own record of the call still refuses
    stored = json.loads((work / "incomplete.json").read_text(encoding="utf-8"))["fingerprint"]
    with monkeypatch.context() as m:
        m.setattr(cli.resume, "fingerprint", lambda *args: stored)
        assert cli.main(_args(inputs, out, "--resume", "--seed", "1")) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("faithlab evaluate: error: --resume:") and "other options seed" in err, err
    assert _chunks(work, "evaluate") == ["chunk-0-2.json"] and not out.exists()

    spy.arm()
    assert cli.main(_args(inputs, out, "--resume")) == 0
    assert spy.saved[:2] == [("evaluate", 2), ("evaluate", 4)]  # the cut chunk is computed again, whole
    _same_report(out, baseline)


def test_a_leftover_run_is_named_and_replaced_without_resume(inputs, tmp_path, spy, capsys):
    out, work = tmp_path / "report", tmp_path / "report.partial"
    spy.arm(at_save=1)
    assert cli.main(_args(inputs, out, "--no-sanity")) == 130
    capsys.readouterr()
    spy.arm()
    assert cli.main(_args(inputs, out, "--no-sanity")) == 0
    printed = [line for line in capsys.readouterr().out.splitlines() if "interrupted run" in line]
    assert len(printed) == 1 and "an interrupted run of faithlab evaluate" in printed[0]
    assert "pass --resume to continue it" in printed[0]
    assert spy.saved == [("evaluate", 0), ("evaluate", 2), ("evaluate", 4)]  # started over: every chunk computed
    assert not work.exists() and (out / "report.csv").is_file()
    # a folder of that name that is not a run's is never replaced
    (tmp_path / "mine.partial").mkdir()
    (tmp_path / "mine.partial" / "notes.txt").write_text("mine")
    assert cli.main(_args(inputs, tmp_path / "mine", "--no-sanity")) == 2
    assert "--out" in capsys.readouterr().err and (tmp_path / "mine.partial" / "notes.txt").is_file()


def test_evaluate_checkpoint_reads_back_rows_costs_hints_and_warnings(tmp_path, monkeypatch):
    """fl.evaluate(checkpoint=) on tensors: cut after one chunk, the second call computes the rest and returns the
    same frame (bitwise), cost counts and hints, and the warnings of the chunks it read back; a call with another
    option is refused naming it."""
    torch.manual_seed(0)
    model = fl.models.build("small_cnn", n_classes=2, width=4).eval()
    x, y = torch.randn(6, 3, 16, 16), torch.tensor([0, 1, 0, 1, 0, 1])

    def explainer(m, inputs, target):
        warnings.warn(f"mapped a chunk starting {float(inputs[0, 0, 0, 0]):.4f}")  # one message per chunk
        return fl.explainers.explain(m, inputs, target, method="saliency").detach()

    kw = dict(metrics=["rfid+", "aopc"], explainer=explainer, chunk_size=2, progress=False, sparsity=[0.5],
              n_samples=2)

    def run(**more):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            frame = fl.evaluate(model, x, y, **{**kw, **more})
        return frame, [str(w.message) for w in caught]

    whole, told = run()
    assert sum("mapped a chunk" in m for m in told) == 3
    save, kept = checkpoints.Checkpoint.save, []

    def cut(checkpoint, *rest):
        save(checkpoint, *rest)
        kept.append(rest[0])
        if len(kept) == 1:
            raise KeyboardInterrupt

    monkeypatch.setattr(checkpoints.Checkpoint, "save", cut)
    with pytest.raises(KeyboardInterrupt):
        run(checkpoint=tmp_path / "ck")
    resumed, told_again = run(checkpoint=tmp_path / "ck")
    assert len(kept) == 3  # one chunk kept, then two computed
    pd.testing.assert_frame_equal(resumed, whole, check_exact=True)
    count = ["group", "explainer", "forward_inputs", "model_calls", "explained_inputs"]
    assert [[r[k] for k in count] for r in resumed.attrs["cost"]] == [[r[k] for k in count]
                                                                      for r in whole.attrs["cost"]]
    assert resumed.attrs["hints"] == whole.attrs["hints"] and told_again == told
    with pytest.raises(ValueError, match="another call.*n_samples"):
        run(checkpoint=tmp_path / "ck", n_samples=3)
    with pytest.raises(ValueError, match="another call.*rfid_n_samples"):  # one group's value, <group>_<keyword>
        run(checkpoint=tmp_path / "ck", rfid_n_samples=3)
