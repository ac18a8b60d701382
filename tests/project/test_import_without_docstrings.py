"""``python -OO`` strips docstrings (``__doc__`` is None): the package must still import (issue #30)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

MODULES = "faithlab, faithlab.metrics, faithlab.perturb, faithlab.explainers, faithlab_study.papers, faithlab_study"


def test_the_package_imports_with_docstrings_stripped():
    done = subprocess.run([sys.executable, "-OO", "-c", f"import {MODULES}; import faithlab.metrics as m; "
                           "assert m.fid_plus.__doc__ is None, 'not run under -OO'"],
                          capture_output=True, text=True, timeout=300, cwd=Path(__file__).parent)
    assert done.returncode == 0, done.stderr[-2000:]
