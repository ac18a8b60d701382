"""fl.evaluate as a small engine: each input tensor is checked once per call (a counting validator), the boundary
refuses bad data before the model runs, the phases are short functions, and the evaluation modules import one way
(boundary and engine below the budget, the budget below ``evaluate``)."""

from __future__ import annotations

import ast
import collections
import pathlib

import pytest
import torch
from oracles import evaluate_inputs, linear_kfold
from oracles import saliency as _explain

import faithlab as fl
from faithlab import _validate

EVALUATION = pathlib.Path(fl.__file__).parent / "evaluation"
OPTIONS = dict(sparsity=(0.25, 0.5), n_samples=2, n_subsets=6, n_neighbours=2, saco_k=4, edge=4, seed=3,
               progress=False, hints=False)


@pytest.fixture
def counted(monkeypatch):
    """The checks that read a tensor's data, counted per storage: ``counts[(check, data pointer)]``."""
    counts: collections.Counter = collections.Counter()
    for check in ("_finite_scan", "_tensor_data"):
        real = getattr(_validate, check)

        def counting(value, name, _real=real, _check=check):
            counts[(_check, value.untyped_storage().data_ptr())] += 1
            return _real(value, name)

        monkeypatch.setattr(_validate, check, counting)
    return counts


def _of(counts, t: torch.Tensor) -> dict[str, int]:
    ptr = t.untyped_storage().data_ptr()
    return {check: n for (check, p), n in counts.items() if p == ptr}


def test_each_input_tensor_is_checked_once_per_call_whatever_the_metrics_and_chunks(counted):
    model, x, y, maps = evaluate_inputs()
    frame = fl.evaluate(model, x, y, maps, finetuned=model, explainer=_explain, kfold=linear_kfold(x),
                        chunk_size=2, **OPTIONS)
    assert set(frame["metric"]) == set(fl.evaluation.available())  # every metric ran, on 3 chunks
    assert _of(counted, x) == {"_finite_scan": 1, "_tensor_data": 1}
    assert _of(counted, y) == {"_tensor_data": 1}
    assert _of(counted, maps["A"]) == {"_finite_scan": 1, "_tensor_data": 1}


def test_the_counter_sees_each_check_of_a_metric_called_on_its_own(counted):
    """The control: outside ``evaluate`` every metric call checks its inputs itself (so the count above is the
    engine's doing, not a counter that misses checks)."""
    model, x, y, maps = evaluate_inputs()
    for _ in range(2):
        fl.metrics.fid_plus(model, x, maps["A"], target=y, sparsity=(0.5,))
    assert _of(counted, x)["_finite_scan"] >= 2
    assert _of(counted, maps["A"])["_finite_scan"] >= 2


def test_a_checked_block_forgets_its_tensors_when_it_ends(counted):
    x = torch.randn(3, 4)
    with _validate.checked(x):
        _validate.finite(x, "x")
        _validate.finite(x[1:], "x")  # a view of a checked storage
        inner = torch.randn(3)
        with _validate.checked(inner):
            _validate.finite(inner, "inner")
        _validate.finite(inner, "inner")  # the inner block has ended
    _validate.finite(x, "x")
    assert _of(counted, x) == {"_finite_scan": 1}
    assert _of(counted, inner) == {"_finite_scan": 1}


def test_a_checked_tensor_still_gets_the_rank_its_caller_asks_for():
    x = torch.randn(3, 4)
    with _validate.checked(x), pytest.raises(ValueError, match="x must have 4 dimensions"):
        _validate.tensor(x, "x", ndim=4)


def test_nan_in_x_is_refused_at_the_boundary_before_the_model_runs():
    model, x, y, maps = evaluate_inputs()
    calls = []
    model.register_forward_hook(lambda *_: calls.append(1))
    x[4, 1, 2, 3] = float("nan")
    with pytest.raises(ValueError, match="x contains NaN or inf"):
        fl.evaluate(model, x, y, maps, **OPTIONS)
    assert calls == []


def test_an_explainer_returning_nan_maps_is_refused_naming_it_and_the_samples():
    """Maps made by the engine are checked once as they come (then trusted): NaN is never scored."""
    model, x, y, _ = evaluate_inputs()

    def broken(m, inputs, target):
        a = torch.ones_like(inputs)
        a[-1, 0, 0, 0] = float("nan")
        return a

    with pytest.raises(ValueError, match=r"explainer 'broken''s maps of the chunk of samples 0…1 contains NaN"):
        fl.evaluate(model, x, y, explainer={"broken": broken}, metrics=["fid+", "saco"], chunk_size=2, **OPTIONS)


def test_nan_in_a_later_batch_is_refused_naming_the_batch():
    model, x, y, maps = evaluate_inputs()
    bad = x[3:].clone()
    bad[0, 0, 0, 0] = float("inf")
    batches = [{"x": x[:3], "y": y[:3], "attributions": {"A": maps["A"][:3]}},
               {"x": bad, "y": y[3:], "attributions": {"A": maps["A"][3:]}}]
    with pytest.raises(ValueError, match="x of data's batch 1 contains NaN or inf"):
        fl.evaluate(model, batches, metrics=["fid+"], **OPTIONS)


def test_nan_in_a_later_slice_of_one_preloaded_tensor_is_refused_naming_its_batch():
    """Batches that are slices of one tensor share its storage: only the checked view's elements are trusted."""
    model, x, y, maps = evaluate_inputs()
    x[4, 0, 1, 1] = float("nan")

    def batches():
        for i in range(0, 6, 3):
            yield {"x": x[i:i + 3], "y": y[i:i + 3], "attributions": {"A": maps["A"][i:i + 3]}}

    with pytest.raises(ValueError, match="x of data's batch 1 contains NaN or inf"):
        fl.evaluate(model, batches(), metrics=["fid+"], **OPTIONS)


def test_a_view_changed_in_place_or_read_as_another_dtype_is_checked_again(counted):
    x = torch.randn(4, 3)
    with _validate.checked(x):
        _validate.finite(x[:2], "x")  # trusted: inside a checked view
        _validate.finite(x.view(torch.int32), "x")  # another dtype: checked
        x[3, 0] = 1.0  # an in-place change of the storage
        _validate.finite(x[:2], "x")  # checked again
    assert _of(counted, x) == {"_finite_scan": 2}


def test_a_tensor_without_strided_storage_is_simply_checked_inside_a_block():
    sparse = torch.eye(3).to_sparse()
    with _validate.checked(sparse):
        assert _validate.tensor(sparse, "sparse") is sparse
        assert not _validate.is_checked(sparse)
    with torch.inference_mode():
        frozen = torch.randn(3)
    with _validate.checked(frozen):  # an inference tensor has no version counter: never trusted
        assert not _validate.is_checked(frozen)


def test_streamed_batches_are_let_go_once_evaluated():
    """The engine trusts a chunk only while it runs: a stream's earlier batches are not kept alive by the checks."""
    import gc
    import weakref

    model, x, y, maps = evaluate_inputs(b=12)
    refs: list = []

    def batches():
        for i in range(0, 12, 2):
            xb = x[i:i + 2].clone()
            refs.append(weakref.ref(xb))
            yield {"x": xb, "y": y[i:i + 2], "attributions": {"A": maps["A"][i:i + 2].clone()}}

    alive = []

    def explain(m, inputs, target):  # S_avg's explainer: called while each chunk runs
        gc.collect()
        alive.append(sum(r() is not None for r in refs))
        return _explain(m, inputs, target)

    fl.evaluate(model, batches(), metrics=["fid+", "s_avg"], explainer=explain, **OPTIONS)
    assert len(alive) >= 6 and max(alive) <= 2  # the batch under way, and the first (the boundary's head)


def test_a_dataloader_over_an_iterable_dataset_streams_with_chunks():
    model, x, y, maps = evaluate_inputs()

    class Batches(torch.utils.data.IterableDataset):  # no __len__
        def __iter__(self):
            for i in range(0, 6, 3):
                yield {"x": x[i:i + 3], "y": y[i:i + 3], "attributions": {"A": maps["A"][i:i + 3]}}

    loader = torch.utils.data.DataLoader(Batches(), batch_size=None)
    streamed = fl.evaluate(model, loader, metrics=["fid+"], chunk_size=2, **OPTIONS)
    whole = fl.evaluate(model, x, y, {"A": maps["A"]}, metrics=["fid+"], **OPTIONS)
    assert streamed["score"].tolist() == whole["score"].tolist()


def test_a_later_batch_of_other_samples_is_named_by_its_number():
    model, x, y, maps = evaluate_inputs()
    batches = [{"x": x[:3], "y": y[:3]}, {"x": x[3:].double(), "y": y[3:]}]
    with pytest.raises(ValueError, match="x of data's batch 1 has samples .* every batch must hold samples alike"):
        fl.evaluate(model, batches, metrics=["fid+"], explainer=_explain, **OPTIONS)


def _functions(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def _code_lines(fn: ast.FunctionDef) -> int:
    """A function's lines without its docstring."""
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    return 0 if not body else body[-1].end_lineno - body[0].lineno + 1


def test_no_function_of_evaluate_is_over_80_lines():
    long = {f"{path.name}:{fn.name}": _code_lines(fn) for path in sorted(EVALUATION.glob("*.py"))
            for fn in _functions(ast.parse(path.read_text(encoding="utf-8"))) if _code_lines(fn) > 80}
    assert long == {}


def test_the_measure_of_function_length_counts_code_not_the_docstring():
    source = 'def f():\n    """doc\n\n    more"""\n' + "    x = 1\n" * 81
    (fn,) = _functions(ast.parse(source))
    assert _code_lines(fn) == 81


def _imports(path: pathlib.Path) -> set[str]:
    """The faithlab.evaluation modules a file imports, at module level or inside functions."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "faithlab.evaluation":
                out |= {a.name for a in node.names}
            elif node.module.startswith("faithlab.evaluation."):
                out.add(node.module.rsplit(".", 1)[1])
    return out


def test_the_evaluation_modules_import_one_way():
    """loop (``evaluate``) → budget → estimation → engine → checkpoint → call: nothing below imports what is above
    it (the import circle evaluate → budget → estimate → evaluate is gone)."""
    above = {"call": {"checkpoint", "engine", "estimation", "budget", "loop"},
             "checkpoint": {"engine", "estimation", "budget", "loop"}, "engine": {"estimation", "budget", "loop"},
             "estimation": {"budget", "loop"}, "budget": {"loop"}}
    wrong = {name: sorted(_imports(EVALUATION / f"{name}.py") & up) for name, up in above.items()}
    assert {k: v for k, v in wrong.items() if v} == {}
