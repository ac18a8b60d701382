"""One version everywhere (pyproject.toml, faithlab.__version__, CITATION.cff, CHANGELOG.md, the book's footer) and
the LICENSE file the metadata declares."""

from __future__ import annotations

import importlib.util
import re
import tomllib
from pathlib import Path
from types import SimpleNamespace

import yaml

import faithlab

ROOT = Path(__file__).resolve().parents[2]


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _changelog_releases() -> list[str]:
    """The versions of CHANGELOG.md's release headings (``## [1.2.3] - 2026-01-01``), newest first."""
    headings = re.findall(r"^## \[([^\]]+)\](.*)$", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert headings and headings[0][0] == "Unreleased", "CHANGELOG.md must open with an [Unreleased] section"
    releases = []
    for version, rest in headings[1:]:
        assert re.fullmatch(r" - \d{4}-\d{2}-\d{2}", rest), f"release {version} needs ' - YYYY-MM-DD', got {rest!r}"
        releases.append(version)
    return releases


def test_one_version_in_pyproject_package_citation_and_changelog():
    version = _project()["version"]
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert faithlab.__version__ == version
    assert str(citation["version"]) == version
    assert _changelog_releases()[0] == version
    released = [line for line in (ROOT / "CHANGELOG.md").read_text().splitlines() if line.startswith(f"## [{version}]")]
    assert released == [f"## [{version}] - {citation['date-released']}"], "CITATION.cff's date-released differs"


def changelog_section_problems(text: str) -> list[str]:
    """Each ``## [...]`` section of a changelog (Keep a Changelog) holds each ``### Kind`` heading once, from the
    kinds that format names → the problems, one line each."""
    kinds = {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}
    problems, release, seen = [], None, set()
    for line in text.splitlines():
        if line.startswith("## "):
            release, seen = line[3:], set()
        elif line.startswith("### "):
            kind = line[4:].strip()
            if kind not in kinds:
                problems.append(f"{release}: '### {kind}' is not one of {sorted(kinds)}")
            elif kind in seen:
                problems.append(f"{release}: '### {kind}' twice")
            seen.add(kind)
    return problems


def test_each_changelog_section_names_a_kind_once():
    assert changelog_section_problems((ROOT / "CHANGELOG.md").read_text()) == []
    twice = ("## [Unreleased]\n### Added\n- a\n### Changed\n- b\n### Changed\n- c\n"
             "## [0.1.0] - 2026-01-01\n### Changed\n")  # the same kind again in the next release is fine
    assert changelog_section_problems(twice) == ["[Unreleased]: '### Changed' twice"]
    assert changelog_section_problems("## [Unreleased]\n### Misc\n") == [
        "[Unreleased]: '### Misc' is not one of ['Added', 'Changed', 'Deprecated', 'Fixed', 'Removed', 'Security']"]


def test_citation_file_is_complete():
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert citation["cff-version"] == "1.2.0"
    assert citation["license"] == _project()["license"] == "MIT"
    assert citation["authors"] == [{"name": "the faithlab authors"}]
    assert citation["title"] and citation["message"]


def test_license_file_is_the_license_pyproject_declares():
    project = _project()
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License\n")
    assert "Copyright (c) 2026 the faithlab authors" in text
    assert "Permission is hereby granted, free of charge" in text


def test_version_falls_back_when_faithlab_is_not_installed(monkeypatch):
    from importlib import metadata

    def not_installed(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", not_installed)
    from faithlab._version import version

    assert version() == "0+unknown"


def _extension():
    path = ROOT / "book" / "_ext" / "faithlab_version.py"
    spec = importlib.util.spec_from_file_location("faithlab_version_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_book_extension_sets_the_version_from_the_code(monkeypatch):
    ext = _extension()
    handlers = []
    app = SimpleNamespace(connect=lambda event, handler: handlers.append((event, handler)))
    assert ext.setup(app)["parallel_read_safe"]
    assert [event for event, _ in handlers] == ["config-inited"]
    monkeypatch.setattr(faithlab, "__version__", "9.8.7<b>")  # the number is read from the code, and escaped
    config = SimpleNamespace(version="", release="", html_context={"other": 1},
                             html_theme_options={"extra_footer": "<p>before</p>", "home_page_in_navbar": True})
    handlers[0][1](app, config)
    assert config.version == config.release == "9.8.7<b>"
    assert config.html_context == {"other": 1, "faithlab_version": "9.8.7<b>"}
    assert config.html_theme_options == {
        "extra_footer": '<p>before</p><p class="fl-version">faithlab 9.8.7&lt;b&gt;</p>', "home_page_in_navbar": True}


def test_book_config_registers_the_version_extension():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["sphinx"]["local_extensions"]["faithlab_version"] == "book/_ext"
    assert (ROOT / "book" / "_ext" / "faithlab_version.py").is_file()
