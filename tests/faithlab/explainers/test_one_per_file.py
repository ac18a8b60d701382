"""One explainer algorithm per module of ``faithlab.explainers``, each declaring itself to the registry.

The rule: every module of the package either is an algorithm module, which registers (with ``@register("<name>")``
on a function it defines) exactly the method names of one algorithm listed for it in :data:`ALGORITHMS` (a method
and its named variants, at most :data:`MAX_NAMES`), or is a shared module of :data:`SHARED`, which registers
nothing (``core`` among them: the registry lists no method). The table must match the registry exactly: every
method the library registers is in it, under the module that defines its function. A module given a second
algorithm, a method registered from ``core`` or a new module that is in neither table fails here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import faithlab.explainers as ex
from faithlab.explainers import core

PACKAGE = Path(ex.__file__).parent
MAX_NAMES = 3  # SmoothGrad's three variants: the most names one algorithm registers

ALGORITHMS: dict[str, tuple[str, ...]] = {
    "saliency": ("saliency",),
    "gradient": ("gradient",),
    "input_x_gradient": ("input_x_gradient",),
    "integrated_gradients": ("integrated_gradients",),
    "smoothgrad": ("smoothgrad", "smoothgrad_sq", "sg_sq_ig"),
    "guided_backprop": ("guided_backprop",),
    "deconvolution": ("deconvolution",),
    "expected_gradients": ("expected_gradients",),
    "occlusion": ("occlusion",),
    "random_map": ("random",),
    "gradcam": ("gradcam",),
    "layercam": ("layercam",),
    "rise": ("rise",),
    "extremal_perturbation": ("extremal_perturbation",),
    "excitation_backprop": ("excitation_backprop",),
    "bottleneck": ("iba",),
    "xrai": ("xrai",),
    "vit_raw_attention": ("raw_attention",),
    "vit_rollout": ("rollout",),
    "vit_attention_gradcam": ("attention_gradcam",),
    "vit_transformer_mm": ("transformer_mm",),
    "vit_conservative_lrp": ("conservative_lrp",),
    "vit_lrp": ("lrp",),
    "vit_partial_lrp": ("partial_lrp",),
    "vit_transformer_attribution": ("transformer_attribution",),
    "vit_attcat": ("attcat",),
}
"""Algorithm module → the method names it registers (one algorithm each)."""

SHARED = {"__init__", "core", "_common", "_captum", "_torchray", "vit", "ground_truth"}
"""Modules that register no method: the package, the registry and dispatch, helpers and the ground-truth maps."""


def _registrations(path: Path) -> list[str]:
    """The names a module's source registers: the first argument of every ``register(...)`` call, as a decorator or
    called directly; a name that is not a string literal is reported as ``<computed>`` (the table could not say)."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Call):
            func = node.func
            called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            if called == "register":
                first = node.args[0] if node.args else None
                literal = isinstance(first, ast.Constant) and isinstance(first.value, str)
                names.append(first.value if literal else "<computed>")
    return names


def _modules() -> dict[str, list[str]]:
    return {path.stem: _registrations(path) for path in sorted(PACKAGE.glob("*.py"))}


def test_every_module_is_an_algorithm_module_or_a_shared_one():
    modules = set(_modules())
    assert not set(ALGORITHMS) & SHARED
    assert modules - set(ALGORITHMS) - SHARED == set(), "new module: add it to ALGORITHMS or SHARED"
    assert (set(ALGORITHMS) | SHARED) - modules == set(), "the table names a module that does not exist"


def test_each_algorithm_module_registers_exactly_its_algorithms_names():
    for module, names in _modules().items():
        expected = ALGORITHMS.get(module, ())
        assert len(expected) <= MAX_NAMES, f"{module}: {len(expected)} names is more than one algorithm's"
        assert sorted(names) == sorted(expected), (
            f"faithlab.explainers.{module} registers {sorted(names)}, the table says {sorted(expected)}")


def test_core_and_the_shared_modules_register_nothing():
    modules = _modules()
    assert modules["core"] == []
    assert {m: modules[m] for m in SHARED if modules[m]} == {}


def test_the_table_matches_the_registry_and_each_function_lives_where_it_is_registered():
    listed = {name: module for module, names in ALGORITHMS.items() for name in names}
    assert len(listed) == sum(map(len, ALGORITHMS.values())), "a method name is listed under two modules"
    library = {name for name in ex.available() if core.get_method(name).__module__.startswith("faithlab.")}
    # test files may register their own methods (functions defined in the tests): they are not the library's
    assert library == set(listed)
    for name, module in listed.items():
        fn = core.get_method(name)
        assert fn.__module__ == f"faithlab.explainers.{module}", (name, fn.__module__)
        assert (PACKAGE / f"{module}.py").read_text().count(f"def {fn.__name__}(") == 1, (name, fn.__name__)


def test_the_vit_method_names_are_registered_by_vit_modules():
    assert set(ex.METHODS) == {*ex.ATTENTION_METHODS, "conservative_lrp", *ex.LRP_METHODS}
    for name in ex.METHODS:
        assert core.get_method(name).__module__.startswith("faithlab.explainers.vit_"), name
