"""The rival metrics the study sets beside the papers' (issue 72), on the book's synthesis page (slug
``synthesis``): ``road_curves`` (ROAD, Rong et al., ICML 2022: removal curves with noisy linear imputation, no
retraining, F-Fidelity's rival fix of the out-of-distribution problem, also in F-Fidelity's chapter) and
``explanation_infidelity`` (Yeh et al., NeurIPS 2019, through captum). Their public names (``road``,
``infidelity``, …) are gathered here and in :mod:`faithlab.metrics`; no module is named like a function, which
the package's name would then hide.
"""

import importlib as _importlib
import pkgutil as _pkgutil

__all__: list[str] = []


def _gather() -> None:
    """Each module's public names (``road``, ``infidelity``, …), here: the package is the namespace users call
    through."""
    for info in _pkgutil.iter_modules(__path__):
        module = _importlib.import_module(f"{__name__}.{info.name}")
        __all__.extend(getattr(module, "__all__", []))
        globals().update({n: getattr(module, n) for n in getattr(module, "__all__", [])})


_gather()
