"""What the fuzz of the paper metrics' public API with bad input (issue #32) shares: the fuzz of Few-class
Fidelity, TRACE, μF and ``fl.evaluate`` (tests/faithlab/fuzz/test_paper_metrics_bad_input.py), of the map-only
functions (tests/faithlab/fuzz/test_paper_map_functions.py), of ReCo/MeGe, S_avg and ``cross_train``
(tests/faithlab/fuzz/test_reco_mege_bad_input.py) and of the study runner's command line
(tests/faithlab_study/runner/test_runner_bad_options.py).

Tiny tensors (4 samples, 1 channel, 4 × 4 pixels, 3 classes) and the one classification of every case: it either
raises a ValueError or TypeError whose message names the argument the caller passed (:func:`check_case`), or returns a
documented, flagged result. A case that raises without naming the argument is listed in :data:`UNCLEAR` with why it
stays; a silent or hanging one is an ``xfail(strict=True)`` in :data:`SILENT` (:func:`case_params`).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
import torch
from torch import nn

from faithlab.metrics import fewclass, search

B, C, H, W, K = 4, 1, 4, 4, 3
EDGE = 2  # TRACE: a 2 × 2 grid of 2 × 2-pixel patches (t = 4; complete search: 16 inputs per image)
GRID = fewclass.candidate_grid(["V1"])  # 36 Few-class candidates: the search stays fast


def tiny_model(binary: bool = False, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Flatten(), nn.Linear(C * H * W, 1 if binary else K)).eval()


def tiny_inputs(binary: bool = False):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(B, C, H, W, generator=g)
    a = torch.randn(B, C, H, W, generator=g)
    y = torch.tensor([0, 1, 1, 0]) if binary else torch.tensor([0, 1, 2, 0])
    return x, a, y


def tiny_perturbed() -> torch.Tensor:
    """Few-class replacement images (any fixed images of x's shape will do for the fuzz)."""
    return torch.randn(B, C, H, W, generator=torch.Generator().manual_seed(2)) * 0.1


def tiny_trajectory() -> torch.Tensor:
    return torch.stack([torch.randperm(EDGE * EDGE, generator=torch.Generator().manual_seed(i)) for i in range(B)])


class Wrapped(nn.Module):
    """A model whose logits are changed by ``fn(inputs, logits)``."""

    def __init__(self, fn: Callable, binary: bool = False):
        super().__init__()
        self.inner, self.fn = tiny_model(binary), fn

    def forward(self, inputs):
        return self.fn(inputs, self.inner(inputs))


class KfoldResult:
    """What ``evaluate`` reads of ``cross_train``'s result: k models and each sample's fold."""

    def __init__(self, models, folds):
        self.models, self.folds = models, folds


def weight_explainer(model, inputs, target):
    """A deterministic map that depends on the input and the model (input × the target's weights)."""
    weight = model[1].weight.detach()[target].view(-1, C, H, W)
    return inputs * weight


def tiny_boxes() -> torch.Tensor:
    return torch.tensor([[0, 0, 2, 2], [1, 1, 4, 3], [0, 2, 4, 4], [2, 0, 3, 4]])


def tiny_masks() -> torch.Tensor:
    return torch.zeros(B, H, W, dtype=torch.bool).index_put((torch.arange(B), torch.arange(B), torch.arange(B)),
                                                            torch.tensor(True))


# ------------------------------------------------------------------------------------------------ classification
def names_argument(message: str, argument: str) -> bool:
    """Whether ``message`` names ``argument`` as a word (``x`` not inside ``x0``, ``--cluster`` as a whole)."""
    return re.search(rf"(?<![\w-]){re.escape(argument)}(?![\w-])", message) is not None


UNCLEAR: dict[str, str] = {
    # case id: why the message does not name the caller's argument (none left: issue #32 fixed the 30 found)
}
"""Cases that raise, but whose message does not name the argument: each listed with why it stays. Strict: a case
here that starts naming its argument fails, so that it leaves the list."""

SILENT: dict[str, str] = {
    # case id: what comes back from the invalid input (none left: issue #32 fixed the 20 found)
}
"""Silent (a finite or plausible result from invalid input) and hanging cases, expected to fail until fixed."""


CALL_ERROR = re.compile(r"got multiple values for argument|got an unexpected keyword argument|missing \d+ required")
"""Python's own TypeErrors of a wrong call: they name the argument too, but say nothing of the library's checks."""


def check_case(case: str, thunk: Callable[[], object], argument: str | tuple[str, ...]) -> None:
    names = (argument,) if isinstance(argument, str) else argument
    if case in UNCLEAR:
        with pytest.raises(Exception) as err:  # an unclear case may leak any error
            thunk()
        good = isinstance(err.value, (ValueError, TypeError)) and any(names_argument(str(err.value), n) for n in names)
        assert not good, f"{case} now names {names}: drop it from UNCLEAR"
        return
    with pytest.raises((ValueError, TypeError)) as err:
        thunk()
    assert not CALL_ERROR.search(str(err.value)), f"{case}: the test called the function wrongly: {err.value}"
    assert any(names_argument(str(err.value), n) for n in names), f"{case}: message does not name {names}: {err.value}"


def case_params(cases: list[tuple]) -> list:
    """pytest params with the id ``call/bad`` and the SILENT cases marked xfail(strict=True)."""
    out = []
    for case in cases:
        cid = f"{case[0]}/{case[1]}"
        marks = [pytest.mark.xfail(strict=True, reason=SILENT[cid])] if cid in SILENT else []
        out.append(pytest.param(*case, id=cid, marks=marks))
    return out


def finite_result(out) -> bool:
    if isinstance(out, torch.Tensor):
        return out.numel() > 0 and bool(torch.isfinite(out.double()).all())
    if isinstance(out, dict):
        return all(finite_result(v) for v in out.values() if isinstance(v, torch.Tensor) and v.is_floating_point())
    if isinstance(out, search.Search):
        return finite_result(out.lerf) and finite_result(out.morf)
    if hasattr(out, "score"):  # evaluate's frame; μF is NaN where the drops are constant (documented)
        return len(out) > 0 and bool(out.loc[out["metric"] != "mu_fidelity", "score"].notna().all())
    return False


def allow_listed(calls) -> set[str]:
    """The cases of :data:`UNCLEAR` and :data:`SILENT` whose callable is one of ``calls``: each file of the fuzz
    checks that those name cases it has."""
    return {case for case in (*UNCLEAR, *SILENT) if case.split("/")[0] in calls}
