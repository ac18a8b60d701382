"""The installed distribution's version, which ``faithlab.__version__`` reads on first use."""

from __future__ import annotations


def version() -> str:
    """The installed distribution's version (pyproject.toml's ``version``, which CITATION.cff and CHANGELOG.md
    repeat); "0+unknown" when faithlab is imported from a source tree that was never installed. Read on first use of
    ``faithlab.__version__`` (importlib.metadata costs tens of milliseconds to import)."""
    from importlib import metadata

    try:
        return metadata.version("faithlab")
    except metadata.PackageNotFoundError:
        return "0+unknown"
