"""Sphinx extension for the book's API reference (book/api.md, book/api/*.md): two adaptations of autodoc to the
library's plain-text docstrings, so that the reference builds under ``-W -n``.

* Absolute values and set sizes are written ``|x|`` in the docstrings (as in the papers); reStructuredText reads
  ``|x|`` as a substitution and fails. ``autodoc-process-docstring`` escapes every ``|`` outside inline literals.
* The public names are re-exported by their packages (``faithlab.metrics.fid_plus`` is
  ``faithlab.metrics.papers.ffidelity.fid_plus``) and autodoc documents each object once, under its defining module.
  ``missing-reference`` resolves a Python cross-reference whose target imports to a faithlab object: to the page
  of its defining module where that object is documented, else (a private helper, an undocumented constant) to the
  name as code, without a link. A reference that does not import (a typo, a removed name) still fails the build.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import re
import sys

from docutils import nodes

_FIELD = object()  # a field of a dataclass or named tuple: exists, has no object of its own
_LITERAL = re.compile(r"(``.+?``|:[a-z:]+:`[^`]+`)")


def _escape(line: str) -> str:
    """``|`` → ``\\|`` outside inline literals and roles (a line starting with ``|`` is left as it is)."""
    if "|" not in line:
        return line
    parts = _LITERAL.split(line)
    return "".join(part if i % 2 else part.replace("|", r"\|") for i, part in enumerate(parts))


def process_docstring(app, what, name, obj, options, lines) -> None:
    lines[:] = [_escape(line) for line in lines]


@functools.lru_cache(maxsize=None)
def _import(target: str):
    """The object a dotted name imports to (module, then attributes), or None. Cached: the write phase asks for the
    same few thousand names about a million times (each reference tries every faithlab module), which cost about 50 s
    of a build's 130 s, mostly failed imports that Python does not cache."""
    parts = target.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        rest = parts[cut:]
        for i, attr in enumerate(rest):
            try:
                obj = getattr(obj, attr)
            except AttributeError:  # a dataclass field without a default is no class attribute
                fields = getattr(obj, "__dataclass_fields__", None) or getattr(obj, "_fields", ())
                return _FIELD if i == len(rest) - 1 and attr in fields else None
        return obj
    return None


def _candidates(node) -> list[str]:
    """The dotted names a reference may mean: as written, inside its current class and module, then inside any
    faithlab module (an autosummary line is parsed outside the module its docstring was written in)."""
    target = node["reftarget"].lstrip("~.")
    names = [target]
    module, cls = node.get("py:module"), node.get("py:class")
    if module and cls:
        names.append(f"{module}.{cls}.{target}")
    if module:
        names.append(f"{module}.{target}")
    names += [f"{name}.{target}" for name in _faithlab_modules(len(sys.modules))]
    return names


@functools.lru_cache(maxsize=8)
def _faithlab_modules(n_modules: int) -> tuple[str, ...]:
    """The imported modules of the library and the study (``faithlab.*``, ``faithlab_study`` and its modules),
    sorted; recomputed only when ``sys.modules`` grows (``n_modules``)."""
    return tuple(name for name in sorted(sys.modules) if name.startswith(("faithlab.", "faithlab_study")))


def missing_reference(app, env, node, contnode):
    if node.get("refdomain") != "py":
        return None
    for name in _candidates(node):
        if not name.startswith("faithlab"):
            continue
        obj = _import(name)
        if obj is None:
            continue
        home = getattr(obj, "__module__", None)
        qualname = getattr(obj, "__qualname__", None)
        if inspect.ismodule(obj):
            home, qualname = obj.__name__, None
        if home and qualname and home.startswith("faithlab"):
            canonical = f"{home}.{qualname}"
            domain = env.get_domain("py")
            resolved = domain.resolve_any_xref(env, node["refdoc"], app.builder, canonical, node, contnode)
            if resolved:
                return resolved[0][1]
        return nodes.literal(text=node["reftarget"].lstrip("~"))
    return None


def setup(app):
    app.connect("autodoc-process-docstring", process_docstring)
    app.connect("missing-reference", missing_reference)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
