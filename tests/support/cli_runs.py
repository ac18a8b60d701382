"""What the tests of ``faithlab evaluate`` (tests/faithlab/cli/) share: a folder of random class images, and the check
that the command stopped with one error line."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def class_folder(root: Path, per_class: int = 1, classes: str = "ab", side: int = 16) -> Path:
    """``root/<class>/<i>.png``: ``per_class`` random ``side`` × ``side`` RGB images for each class (seeded)."""
    from PIL import Image

    rng = np.random.default_rng(0)
    for cls in classes:
        (root / cls).mkdir(parents=True)
        for i in range(per_class):
            Image.fromarray(rng.integers(0, 256, (side, side, 3), dtype=np.uint8)).save(root / cls / f"{i}.png")
    return root


def one_line_error(capsys, *needles: str) -> str:
    """The command's stderr, checked to be one line without a traceback that contains every one of ``needles``."""
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    for needle in needles:
        assert needle in err, (needle, err)
    return err
