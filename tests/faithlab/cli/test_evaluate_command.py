"""``faithlab evaluate`` end to end (issue 31): a random torchvision ResNet-18 state dict and six PNGs of two classes
in a temporary folder → the report (CSVs, map figures, index.html) whose numbers equal ``fl.evaluate``'s own call on
the same tensors; the same through the template notebook; every usage error exits 2 naming its flag."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

import faithlab as fl
from faithlab import cli, report

torchvision = pytest.importorskip("torchvision")
ROOT = Path(__file__).resolve().parents[3]
METRICS = ["fid+", "rfid+", "saco", "aopc", "mu_fidelity", "le-mo"]
SETTINGS = {"sparsity": [0.1, 0.3, 0.5, 0.7, 0.9], "n_samples": 2, "n_subsets": 8}  # the smoke profile's
SIZE = 32


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """weights.pt (random ResNet-18, two classes) and images/{a,b}/*.png (three each)."""
    from PIL import Image

    tmp = tmp_path_factory.mktemp("cli")
    torch.manual_seed(0)
    torch.save(torchvision.models.resnet18(num_classes=2).state_dict(), tmp / "weights.pt")
    rng = np.random.default_rng(0)
    for c, cls in enumerate("ab"):
        (tmp / "images" / cls).mkdir(parents=True)
        for i in range(3):
            pixels = rng.integers(0, 256, (40, 48, 3), dtype=np.uint8)
            pixels[..., c] = 255 - pixels[..., c] // 4  # the classes differ in one colour channel
            Image.fromarray(pixels).save(tmp / "images" / cls / f"{i}.png")
    return tmp


def _args(inputs: Path, out: Path, *extra: str) -> list[str]:
    sets = [a for k, v in SETTINGS.items() for a in ("--set", f"{k}={v}")]
    return ["evaluate", "--model", "torchvision:resnet18", "--weights", str(inputs / "weights.pt"), "--images",
            str(inputs / "images"), "--explainers", "saliency,gradcam", "--metrics", ",".join(METRICS), "--size",
            str(SIZE), "--batch-size", "4", "--maps", "2", "--out", str(out), "--yes", *sets, *extra]


@pytest.fixture(scope="module")
def direct(inputs: Path) -> pd.DataFrame:
    """fl.evaluate's own call on the tensors of the same images, model and explainers (computed once: two tests
    compare against it)."""
    import dataclasses

    model = fl.models.load("torchvision:resnet18", weights=inputs / "weights.pt")
    pre = dataclasses.replace(fl.models.preprocessing(model), resize=SIZE, crop=(SIZE, SIZE))
    data = fl.data.image_folder(inputs / "images", preprocess=pre).tensors()
    with torch.no_grad():
        target = model(data.x).argmax(1)
    explain = {m: (lambda m_: lambda net, x, t: fl.explainers.explain(net, x, t, method=m_).detach())(m)
               for m in ("saliency", "gradcam")}
    maps = {name: fn(model, data.x, target) for name, fn in explain.items()}
    return fl.evaluate(model, data.x, data.y, maps, metrics=METRICS, explainer=explain, seed=0, **SETTINGS)


def _check_report(folder: Path, direct: pd.DataFrame) -> None:
    for name in report.TABLES:
        assert (folder / f"{name}.csv").is_file(), name
    rows = pd.read_csv(folder / "report.csv")
    assert len(rows) == 6 * 2 * len(METRICS)
    assert set(rows["metric"]) == set(METRICS) and set(rows["explainer"]) == {"saliency", "gradcam"}
    key = ["explainer", "metric", "sample"]
    both = rows.merge(direct.astype({"sample": int}), on=key, suffixes=("", "_direct"))
    assert len(both) == len(rows)
    np.testing.assert_allclose(both["score"], both["score_direct"], rtol=1e-4, atol=1e-6, equal_nan=True)
    summary = pd.read_csv(folder / "summary.csv").set_index("label")
    mean = direct.groupby(["label", "explainer"])["score"].mean().unstack()
    np.testing.assert_allclose(summary.loc[mean.index, mean.columns].to_numpy(float), mean.to_numpy(), rtol=1e-4)
    sanity = pd.read_csv(folder / "sanity.csv")
    assert set(sanity["metric"]) == set(METRICS) - {"s_avg"}
    change = sanity[report.RANKING_CHANGE]
    assert (change.between(0, 1) | change.isna()).all() and change.notna().any()
    assert set(pd.read_csv(folder / "cost.csv")["metric"]) == set(METRICS)
    page = (folder / "index.html").read_text(encoding="utf-8")
    for name in report.TABLES:
        assert f"href='{name}.csv'" in page
    for png in ("ranks.png", "maps_0.png", "maps_1.png"):
        assert (folder / png).stat().st_size > 1000 and f"src='{png}'" in page
    assert "Sanity checks" in page and "<table" in page and fl.__version__ in page


def test_evaluate_writes_the_report_equal_to_evaluate(inputs, direct, tmp_path, capsys):
    out = tmp_path / "report"
    assert cli.main(_args(inputs, out)) == 0
    printed = capsys.readouterr().out
    assert "model inputs per image" in printed and "estimated total" in printed and "torchvision:resnet18" in printed
    _check_report(out, direct)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".report")]  # no staging folder left


def test_python_m_faithlab_runs_the_command(inputs, tmp_path):
    """The entry point works in a fresh process (``python -m faithlab``; the console script calls the same main) and
    passes main's exit status on (2 for a bad argument, as tests/faithlab/cli/test_odd_folders.py checks main for a
    missing image folder, in a fresh process too)."""
    done = subprocess.run([sys.executable, "-m", "faithlab", *_args(inputs, tmp_path / "r", "--estimate-only")],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "estimated total" in done.stdout and not (tmp_path / "r").exists()
    bad = subprocess.run([sys.executable, "-m", "faithlab", "evaluate", "--model", "torchvision:resnet18"],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "--images" in bad.stderr and "Traceback" not in bad.stderr


def test_help_describes_every_flag(capsys):
    assert cli.main(["evaluate", "--help"]) == 0
    text = capsys.readouterr().out
    for flag in ("--model", "--weights", "--images", "--labels", "--explainers", "--metrics", "--device",
                 "--batch-size", "--n-images", "--set", "--out", "--yes", "--estimate-only", "--size", "--finetuned"):
        assert flag in text, flag
    assert cli.main(["--help"]) == 0 and "evaluate" in capsys.readouterr().out


@pytest.mark.parametrize("change, flag", [
    ({"--model": "torchvision:resnet_nope"}, "--model"),
    ({"--weights": "missing.pt"}, "--weights"),
    ({"--images": "empty"}, "--images"),
    ({"--explainers": "saliency,nope"}, "--explainers"),
    ({"--explainers": "integrated_gradients:n_steps"}, "--explainers"),
    ({"--metrics": "fid+,nope"}, "--metrics"),
    ({"--metrics": "reco"}, "--metrics"),
    ({"--metrics": "ffid+"}, "--metrics"),
    ({"--set": "n_nope=3"}, "--set"),
    ({"--set": "n_samples=-1"}, "--set"),
    ({"--labels": "missing.csv"}, "--labels"),
    ({"--batch-size": "0"}, "--batch-size"),
    ({"--device": "nodevice"}, "--device"),
])
def test_usage_errors_exit_2_naming_the_flag(inputs, tmp_path, capsys, change, flag):
    (tmp_path / "empty").mkdir()
    args = _args(inputs, tmp_path / "out", "--estimate-only")
    for key, value in change.items():
        value = str(tmp_path / value) if key in ("--weights", "--images", "--labels") else value
        if key in args and key != "--set":
            args[args.index(key) + 1] = value
        else:
            args += [key, value]
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert flag in err and "Traceback" not in err, err
    if change.get("--metrics") == "reco":
        assert "cross-train" in err


@pytest.mark.slow
def test_template_notebook_reads_a_model_file_and_an_image_folder(inputs, direct, tmp_path, monkeypatch):
    """runner.run of the template with model/weights/images parameters writes the same numbers as the command."""
    from faithlab_study import runner

    monkeypatch.setenv("FAITHLAB_CACHE", str(tmp_path / "cache"))
    overrides = {"model": "torchvision:resnet18", "weights": str(inputs / "weights.pt"),
                 "images": str(inputs / "images"), "image_size": SIZE, "n_images": 6, "kfold": 0,
                 "explainers": {"saliency": ["saliency", {}], "gradcam": ["gradcam", {}]}, "metrics": METRICS,
                 "report_dir": str(tmp_path / "nb_report")}
    results = runner.run(["templates/evaluate_your_explainer"], profile="smoke", overrides=overrides, root=ROOT,
                        generated=tmp_path / "gen", force=True, jobs=1, timeout=600, echo=lambda *a: None)
    assert [r.status for r in results] == ["ran"], results[0].message
    folder = tmp_path / "gen" / "templates" / "evaluate_your_explainer"
    for name in report.TABLES:
        assert (folder / f"{name}.csv").is_file()
    _check_report(tmp_path / "nb_report", direct)


def test_settings_are_checked_against_the_images_own_shape(inputs, tmp_path, capsys):
    # TRACE's edge 7 divides a 56-pixel side: accepted (a check on any other shape would refuse it) ...
    args = _args(inputs, tmp_path / "out", "--estimate-only", "--set", "edge=7")
    args[args.index("--size") + 1] = "56"
    assert cli.main(args) == 0, capsys.readouterr().err
    # ... and refused, naming --set, where it does not divide the side
    args[args.index("--size") + 1] = "60"
    assert cli.main(args) == 2
    assert "--set" in capsys.readouterr().err
