"""Sphinx extension: the book shows the version of faithlab it was built with.

The number comes from the code (``faithlab.__version__``, i.e. pyproject.toml's ``version`` as installed), never
from text typed into _config.yml: at ``config-inited`` it sets Sphinx's ``version`` and ``release``, adds
``faithlab_version`` to ``html_context`` for templates, and appends "faithlab <version>" to the footer of every page
(sphinx-book-theme's ``extra_footer``, kept after any footer the configuration already has).
"""

from __future__ import annotations

import html

FOOTER_CLASS = "fl-version"  # the footer paragraph's class (book/_static/faithlab.css may style it)


def footer(version: str) -> str:
    """The footer's HTML: one paragraph naming the faithlab version, escaped."""
    return f'<p class="{FOOTER_CLASS}">faithlab {html.escape(version)}</p>'


def set_version(app, config) -> None:
    """``config-inited`` handler: Sphinx's version/release, ``html_context["faithlab_version"]`` and the footer."""
    import faithlab

    version = faithlab.__version__
    config.version = config.release = version
    config.html_context = {**(config.html_context or {}), "faithlab_version": version}
    options = dict(config.html_theme_options or {})
    before = options.get("extra_footer") or ""
    options["extra_footer"] = before + footer(version)
    config.html_theme_options = options


def setup(app):
    app.connect("config-inited", set_version)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
