"""Optional dependencies: import one where it is needed, or say which extra installs it.

``pip install faithlab`` brings the metric core only (torch, torchvision, captum, numpy, scipy, pandas, tqdm); timm
models, TorchRay's and PAIR's explainers, the report's figures, ... are optional-dependency groups of pyproject.toml. A
function that needs one imports it through :func:`require`, so that a slim install fails with the command that fixes
it instead of a bare ``No module named 'timm'``::

    timm = require("timm", "fl.models.pretrained(source='timm')")
    # ModuleNotFoundError: fl.models.pretrained(source='timm') needs timm: pip install 'faithlab[timm]'
"""

from __future__ import annotations

import importlib
from types import ModuleType

# import name -> (distribution on PyPI, extra of pyproject.toml that installs it); tests/project/test_wheel.py checks
# each pair against pyproject.toml
EXTRAS: dict[str, tuple[str, str]] = {
    "matplotlib": ("matplotlib", "report"),
    "seaborn": ("seaborn", "report"),
    "sklearn": ("scikit-learn", "data"),
    "timm": ("timm", "timm"),
    "torchray": ("torchray", "torchray"),
    "deel": ("deel-torchlip", "lipschitz"),
    "saliency": ("saliency", "saliency"),
    "ot": ("pot", "ot"),
    "yaml": ("pyyaml", "yaml"),
}


def message(module: str, what: str) -> str:
    """The sentence a missing optional ``module`` (an import name of :data:`EXTRAS`, or a submodule of one) gives:
    ``"<what> needs <distribution>: pip install 'faithlab[<extra>]'"``."""
    top = module.partition(".")[0]
    if top not in EXTRAS:
        raise ValueError(f"module must be an optional dependency ({sorted(EXTRAS)}), got {module!r}")
    distribution, extra = EXTRAS[top]
    return f"{what} needs {distribution}: pip install 'faithlab[{extra}]'"


def require(module: str, what: str) -> ModuleType:
    """Import ``module`` (e.g. ``"timm"``, ``"sklearn.tree"``) for ``what`` (the function or feature, as the user
    called it) and return it. When the optional package is not installed, raise ModuleNotFoundError (an ImportError)
    saying which extra installs it (:func:`message`); a package that is installed but fails on a missing dependency
    of its own re-raises that error unchanged."""
    text = message(module, what)
    top = module.partition(".")[0]
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as err:
        if err.name is None or err.name.partition(".")[0] != top:
            raise
        raise ModuleNotFoundError(text, name=top) from err


def missing(err: BaseException, what: str) -> str | None:
    """The one line to print for ``err`` when it is a missing optional dependency → ``err``'s own message when
    :func:`require` raised it (it names the extra), the :func:`message` of ``what`` for a bare ``No module named``
    of a module of :data:`EXTRAS`; None for any other error (a traceback is then the honest report)."""
    if not isinstance(err, ModuleNotFoundError) or not err.name:
        return None
    top = err.name.partition(".")[0]
    if top not in EXTRAS:
        return None
    text = str(err)
    return text if "pip install" in text else message(top, what)
