"""The runner tests' shared fixture: a throw-away project."""

from __future__ import annotations

import pytest


@pytest.fixture
def project(tmp_path, monkeypatch):
    """The runner tests' throw-away project (tests/support/study_project.py): two notebooks, empty profiles, under
    ``FAITHLAB_ROOT``. Used by the tests of this folder (the runner's own, and its command line's fuzz cases)."""
    from study_project import make_project  # imported here: faithlab_study and pandas only for the tests that use it

    return make_project(tmp_path, monkeypatch)
