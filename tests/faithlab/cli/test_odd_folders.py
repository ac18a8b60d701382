"""``faithlab evaluate`` on the folders a researcher really has (issue 70, item 5): each odd folder, file or ``--out``
gives a one-line error naming the flag and the file, or a correct report; never a traceback, never a hang.

One Python process (so that torch is imported once) runs ``faithlab.cli.main`` — the function behind the
``faithlab`` command — on every case below; anything that escapes it is printed as a traceback, which the tests
look for. On 7507507 the symlink loop and the named pipe hung the command, the image bomb ended in PIL's traceback
without the file's name, a float TIFF holding NaN was scored, and ``--out`` set to the images folder replaced the
images with the report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0  # root reads files whatever their permissions
RUN = ["evaluate", "--model", "small_cnn", "--random-weights", "--size", "16", "--explainers", "saliency",
       "--metrics", "fid+", "--no-sanity", "--maps", "0", "--yes"]


def _png(path: Path, seed: int = 0) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.random.default_rng(seed).integers(0, 256, (20, 20, 3), dtype=np.uint8)).save(path)


def _cases(root: Path) -> dict[str, dict]:
    """name → {"images": folder, "out": report folder, "extra": flags, "expect": "error" or "report", "names":
    what a one-line error must name, "n": images in the report}: the folders are built here."""
    cases: dict[str, dict] = {}

    def case(name, expect, *, names=(), n=None, extra=(), out=None, images=None):
        folder = root / name if images is None else images
        folder.mkdir(parents=True, exist_ok=True)
        cases[name] = {"images": str(folder), "out": str(out or root / "reports" / name), "extra": list(extra),
                       "expect": expect, "names": list(names), "n": n}
        return folder

    case("empty", "error", names=["--images", "no images"])
    f = case("only_text", "error", names=["--images", "no images"])
    (f / "notes.txt").write_text("not an image")
    (f / "labels.csv").write_text("file,label\n")

    f = case("nested_classes", "report", n=4)
    for rel in ("cat/b.png", "cat/2024/a.png", "dog/x/y/z.png", "dog/w.png"):
        _png(f / rel, len(rel))

    f = case("symlink_loop", "report", n=2)
    _png(f / "cat/a.png")
    _png(f / "dog/a.png", 1)
    os.symlink("..", f / "cat/up")
    os.symlink("../cat", f / "cat/self")
    os.symlink(str(f), f / "dog/root")

    f = case("named_pipe", "report", n=1)
    _png(f / "a.png")
    os.mkfifo(f / "pipe.png")  # opening it for reading would block until someone writes

    f = case("broken_link", "error", names=["--images", "gone.png", "--skip-unreadable"])
    _png(f / "a.png")
    os.symlink(str(root / "nowhere.png"), f / "gone.png")
    cases["broken_link_skipped"] = dict(cases["broken_link"], out=str(root / "reports/broken_link_skipped"),
                                        extra=["--skip-unreadable"], expect="report", n=1, skipped=["gone.png"])

    f = case("not_an_image", "error", names=["--images", "fake.png"])
    _png(f / "a.png")
    (f / "fake.png").write_text("a text file with an image's name")
    f = case("zero_bytes", "error", names=["--images", "empty.jpg"])
    _png(f / "a.png")
    (f / "empty.jpg").write_bytes(b"")

    f = case("image_bomb", "error", names=["--images", "bomb.png", "400,000,000 pixels", "--max-pixels"])
    _png(f / "a.png")
    Image.new("P", (20_000, 20_000)).save(f / "bomb.png", optimize=True)
    cases["image_bomb_skipped"] = dict(cases["image_bomb"], out=str(root / "reports/image_bomb_skipped"),
                                       extra=["--skip-unreadable"], expect="report", n=1, skipped=["bomb.png"])

    f = case("nan_tiff", "error", names=["--images", "nan.tif", "NaN"])
    _png(f / "a.png")
    Image.fromarray(np.array([[0.5, np.nan], [0.25, 1.0]], dtype=np.float32)).save(f / "nan.tif")
    cases["nan_tiff_skipped"] = dict(cases["nan_tiff"], out=str(root / "reports/nan_tiff_skipped"),
                                     extra=["--skip-unreadable"], expect="report", n=1, skipped=["nan.tif"])
    f = case("raw_float_tiff", "error", names=["--images", "hu.tif", "no stated range"])
    Image.fromarray(np.array([[-1000, 40], [400, 3000]], dtype=np.int32)).save(f / "hu.tif")

    f = case("sixteen_bit_scans", "report", n=2)
    for i in range(2):
        Image.fromarray((np.arange(400).reshape(20, 20) * (150 + i)).astype(np.uint16)).save(f / f"s{i}.png")

    f = case("mixed_layout", "error", names=["--images", "mixes images"])
    _png(f / "a.png")
    _png(f / "cat/b.png")

    if not AS_ROOT:
        f = case("no_permission", "error", names=["--images", "locked.png"])
        _png(f / "a.png")
        _png(f / "locked.png")
        os.chmod(f / "locked.png", 0)
        f = case("unlistable_class", "error", names=["--images", "dog"])
        _png(f / "cat/a.png")
        _png(f / "dog/b.png")
        os.chmod(f / "dog", 0)

    images = root / "photos"
    _png(images / "a.png")
    case("out_is_images", "error", names=["--out", "images"], images=images, out=images)
    case("out_holds_images", "error", names=["--out", "images"], images=images, out=root)
    case("out_inside_images", "error", names=["--out", "inside"], images=images, out=images / "report")
    (root / "a_file").write_text("keep me")
    case("out_is_a_file", "error", names=["--out", "not a folder"], images=images, out=root / "a_file")
    (root / "thesis").mkdir()
    (root / "thesis/chapter1.tex").write_text("keep me")
    case("out_is_another_folder", "error", names=["--out", "other files"], images=images, out=root / "thesis")
    case("out_is_an_earlier_report", "report", n=1, images=images, out=root / "reports/empty")  # see the driver
    cases["images_is_a_file"] = dict(cases["out_is_a_file"], images=str(root / "a_file"),
                                     out=str(root / "reports/x"), names=["--images", "not a folder"])
    cases["images_missing"] = dict(cases["images_is_a_file"], images=str(root / "nowhere"))
    return cases


DRIVER = r"""
import contextlib, io, json, sys, traceback
from faithlab import cli
cases = json.loads(sys.stdin.read())
base = json.loads(sys.argv[1])
order = sorted(cases, key=lambda n: n == "out_is_an_earlier_report")  # it reuses the report of "empty"'s out
for name in order:
    c = cases[name]
    if name == "out_is_an_earlier_report":  # make that folder an earlier report: run once into it first
        cli.main(base + ["--images", c["images"], "--out", c["out"]])
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()) as out:
        try:
            rc = cli.main(base + ["--images", c["images"], "--out", c["out"]] + c["extra"])
        except BaseException:
            traceback.print_exc()
            rc = "raised"
    print("CASE " + json.dumps({"name": name, "rc": rc, "stderr": err.getvalue(), "stdout": out.getvalue()}),
          flush=True)
"""


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    root = tmp_path_factory.mktemp("odd")
    cases = _cases(root)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-c", DRIVER, json.dumps(RUN)], input=json.dumps(cases), env=env,
                          capture_output=True, text=True, timeout=600)
    assert "Traceback" not in done.stdout + done.stderr, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.returncode == 0, done.stderr[-3000:]
    got = {}
    for line in done.stdout.splitlines():
        if line.startswith("CASE "):
            record = json.loads(line[5:])
            got[record["name"]] = record
    assert set(got) == set(cases), sorted(set(cases) - set(got))
    return root, cases, got


def _names():
    """The case names, known before the folders are built (the permission cases only when not root)."""
    names = ["empty", "only_text", "nested_classes", "symlink_loop", "named_pipe", "broken_link",
             "broken_link_skipped", "not_an_image", "zero_bytes", "image_bomb", "image_bomb_skipped", "nan_tiff",
             "nan_tiff_skipped", "raw_float_tiff", "sixteen_bit_scans", "mixed_layout", "out_is_images",
             "out_holds_images", "out_inside_images", "out_is_a_file", "out_is_another_folder",
             "out_is_an_earlier_report", "images_is_a_file", "images_missing"]
    return names + ([] if AS_ROOT else ["no_permission", "unlistable_class"])


@pytest.mark.parametrize("name", _names())
def test_each_odd_case_is_one_line_or_a_correct_report(results, name):
    root, cases, got = results
    case, record = cases[name], got[name]
    assert "Traceback" not in record["stderr"] + record["stdout"], record
    if case["expect"] == "error":
        assert record["rc"] == 2, record
        lines = record["stderr"].strip().splitlines()
        assert len(lines) == 1, record["stderr"]
        assert lines[0].startswith("faithlab evaluate: error: "), lines[0]
        for word in case["names"]:
            assert word in lines[0], (word, lines[0])
        return
    assert record["rc"] == 0, record
    out = Path(case["out"])
    report = pd.read_csv(out / "report.csv")
    assert report.loc[report["level"] == "sample", "sample"].nunique() == case["n"], record["stdout"]
    assert f"images: {case['n']} from" in record["stdout"]
    skipped = case.get("skipped")
    if skipped:
        listed = [line.split("\t")[0] for line in (out / "skipped.txt").read_text().splitlines()]
        assert listed == skipped
    else:
        assert not (out / "skipped.txt").exists()


def test_nothing_of_the_users_was_replaced(results):
    """The refused --out cases left the images, the file and the other folder as they were."""
    root, _, _ = results
    assert (root / "photos/a.png").is_file() and not (root / "photos/report").exists()
    assert (root / "a_file").read_text() == "keep me"
    assert sorted(p.name for p in (root / "thesis").iterdir()) == ["chapter1.tex"]


def test_a_folder_that_cannot_be_listed_stops_or_is_skipped(tmp_path, monkeypatch, capsys):
    """A class folder without read permission (simulated: root reads everything): one line naming the folder and
    --skip-unreadable; with it, the report of the other images and the folder in skipped.txt. An --out folder that
    cannot be listed is one line naming --out."""
    from faithlab import cli, report
    from faithlab.data import folder as folder_module

    images = tmp_path / "images"
    _png(images / "cat/a.png")
    _png(images / "dog/b.png", 1)
    _png(images / "lost+found/x.png", 2)
    real = os.scandir

    def scandir(path="."):
        if str(path) == str(images / "lost+found"):
            raise PermissionError(13, "Permission denied")
        return real(path)

    monkeypatch.setattr(folder_module.os, "scandir", scandir)
    assert cli.main([*RUN, "--images", str(images), "--out", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert f"--images: the folder {images / 'lost+found'}/ cannot be listed" in err and "--skip-unreadable" in err
    assert cli.main([*RUN, "--images", str(images), "--out", str(tmp_path / "b"), "--skip-unreadable"]) == 0
    assert (tmp_path / "b/skipped.txt").read_text().startswith("lost+found/\ta folder that cannot be listed")
    assert pd.read_csv(tmp_path / "b/report.csv")["sample"].nunique() == 2
    capsys.readouterr()

    def unreadable(folder):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(report, "replaceable", unreadable)
    assert cli.main([*RUN, "--images", str(images), "--out", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"faithlab evaluate: error: --out: {tmp_path / 'b'} cannot be listed (Permission denied); " \
                          "pass a folder you can write to"


def test_hidden_files_do_not_make_a_folder_someone_elses(tmp_path):
    """A new folder holding only .DS_Store or .ipynb_checkpoints is empty for the report, which may replace it."""
    from faithlab import report

    (tmp_path / ".DS_Store").write_bytes(b"")
    (tmp_path / ".ipynb_checkpoints").mkdir()
    assert report.replaceable(tmp_path)
    (tmp_path / "notes.md").write_text("mine")
    assert not report.replaceable(tmp_path)
