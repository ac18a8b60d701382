"""The metrics of the study's papers, one module or package per chapter slug of the book
(:data:`faithlab.metrics.registry.PAPERS`): ``ffidelity``, ``fewclass``, ``saco``, ``reco_mege``, ``trace`` and
``synthesis``.

A metric declared in ``papers/<slug>`` or ``papers/<slug>/...`` gives ``paper="<slug>"`` (a test holds it), so the
book's chapter, the registry's paper and the module path say the same. A paper with several concepts is a package
with one module per concept; the package gathers its modules' public names. Importing a paper's module registers
the metrics it declares, and the imports below name every paper: a fork adds a paper as ``papers/<its slug>.py`` and
its name to them (README's "Fork: add a metric").
"""

from faithlab.metrics.papers import ffidelity, fewclass, reco_mege, saco, synthesis, trace

__all__ = ["ffidelity", "fewclass", "saco", "reco_mege", "trace", "synthesis"]
