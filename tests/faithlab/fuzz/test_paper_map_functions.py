"""Fuzz of the paper metrics' map-only functions (no model involved) with bad input (issue #32): Few-class
Fidelity's candidate images and localisation (IoU, Dice), TRACE's trajectory maps. Each case raises a ValueError or
TypeError whose message names the argument the caller passed; the unspoilt inputs give finite results. The tiny
inputs and the classification are tests/support/paper_fuzz.py's (as in test_paper_metrics_bad_input.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
import torch

from faithlab.metrics import fewclass, trace
from faithlab.metrics.papers.fewclass import localisation
from paper_fuzz import (B, GRID, H, W, allow_listed, case_params, check_case, finite_result, tiny_boxes, tiny_inputs,
                        tiny_masks, tiny_trajectory)

pytestmark = pytest.mark.timeout(60)  # a case that hangs fails instead of blocking the suite


# ========================================================================== map-only callables (no model involved)

def _map(**over):
    """Few-class localisation, the candidate images and TRACE's trajectory maps: (argument name → value) defaults
    overridden by ``over``; returns the keyword dict."""
    x, a, _ = tiny_inputs()
    return {"x": x, "attributions": a, "index": torch.tensor([0, 5, 35, 5]), "boxes": tiny_boxes(),
            "masks": tiny_masks(), "trajectory": tiny_trajectory(), **over}


MAP_CALLS: dict[str, tuple[Callable, set[str]]] = {
    # name: (call(values) -> result, the options it accepts)
    "candidate_images": (lambda v, **o: fewclass.candidate_images(v["x"], v["index"], grid=o.pop("grid", GRID), **o),
                         {"x", "index", "grid"}),
    "localisation_iou": (lambda v, **o: localisation.localisation_iou(v["attributions"], v["boxes"], **o),
                         {"attributions", "boxes", "batch_size"}),
    "dice_curve": (lambda v, **o: localisation.dice_curve(v["attributions"], v["masks"], **o),
                   {"attributions", "masks", "percents", "batch_size"}),
    "localisation_dice": (lambda v, **o: localisation.localisation_dice(v["attributions"], v["masks"], **o),
                          {"attributions", "masks", "percents", "batch_size", "aggregate"}),
    "trajectory_attribution": (lambda v, **o: trace.trajectory_attribution(v["trajectory"], **o),
                               {"trajectory", "alpha"}),
    "trajectory_map": (lambda v, **o: trace.trajectory_map(v["trajectory"], o.pop("size", 8), **o),
                       {"trajectory", "alpha", "size"}),
}

_nan_map = tiny_inputs()[1].index_put((torch.tensor(1), torch.tensor(0), torch.tensor(2), torch.tensor(2)),
                                      torch.tensor(torch.nan))
MAP_BAD: dict[str, tuple[str, Callable[[], object]]] = {
    # bad class: (the argument it spoils, its value)
    "x_nan": ("x", lambda: tiny_inputs()[0].index_put((torch.tensor(1), torch.tensor(0), torch.tensor(0),
                                                       torch.tensor(0)), torch.tensor(torch.nan))),
    "x_int_images": ("x", lambda: (tiny_inputs()[0] * 10).long()),
    "x_complex": ("x", lambda: tiny_inputs()[0].to(torch.complex64)),
    "x_list": ("x", lambda: tiny_inputs()[0].tolist()),
    "x_3d": ("x", lambda: tiny_inputs()[0][:, 0]),
    "x_empty_batch": ("x", lambda: tiny_inputs()[0][:0]),
    "index_float": ("index", lambda: torch.tensor([0.0, 1.0, 2.0, 3.0])),
    "index_out_of_range": ("index", lambda: torch.tensor([0, 1, 36, 0])),
    "index_negative": ("index", lambda: torch.tensor([0, -1, 2, 0])),
    "index_wrong_length": ("index", lambda: torch.tensor([0, 1])),
    "index_2d": ("index", lambda: torch.tensor([[0], [1], [2], [3]])),
    "index_list": ("index", lambda: [0, 1, 2, 3]),
    "attributions_nan": ("attributions", lambda: _nan_map.clone()),
    "attributions_inf": ("attributions", lambda: tiny_inputs()[1] / 0),
    "attributions_int": ("attributions", lambda: (tiny_inputs()[1] * 10).long()),
    "attributions_complex": ("attributions", lambda: tiny_inputs()[1].to(torch.complex64)),
    "attributions_list": ("attributions", lambda: tiny_inputs()[1].tolist()),
    "attributions_2d": ("attributions", lambda: tiny_inputs()[1].flatten(1)),
    "attributions_empty_batch": ("attributions", lambda: tiny_inputs()[1][:0]),
    "attributions_batch_mismatch": ("attributions", lambda: tiny_inputs()[1][:2]),
    "boxes_float": ("boxes", lambda: tiny_boxes().float()),
    "boxes_wrong_shape": ("boxes", lambda: tiny_boxes()[:, :3]),
    "boxes_wrong_batch": ("boxes", lambda: tiny_boxes()[:2]),
    "boxes_negative": ("boxes", lambda: tiny_boxes() - 1),
    "boxes_outside": ("boxes", lambda: tiny_boxes() + 2),
    "boxes_empty_box": ("boxes", lambda: torch.tensor([[0, 0, 0, 2], [1, 1, 4, 3], [0, 2, 4, 4], [2, 0, 3, 4]])),
    "boxes_list": ("boxes", lambda: tiny_boxes().tolist()),
    "masks_int": ("masks", lambda: tiny_masks().long()),
    "masks_wrong_size": ("masks", lambda: torch.zeros(B, H, W + 1, dtype=torch.bool)),
    "masks_wrong_batch": ("masks", lambda: tiny_masks()[:2]),
    "masks_4d": ("masks", lambda: tiny_masks()[:, None]),
    "masks_list": ("masks", lambda: tiny_masks().tolist()),
    "percents_zero": ("percents", lambda: [0, 50]),
    "percents_above_100": ("percents", lambda: [50, 101]),
    "percents_empty": ("percents", list),
    "percents_nan": ("percents", lambda: [50, float("nan")]),
    "percents_string": ("percents", lambda: "50"),
    "percents_none": ("percents", lambda: None),
    "batch_size_zero": ("batch_size", lambda: 0),
    "batch_size_float": ("batch_size", lambda: 2.5),
    "batch_size_text": ("batch_size", lambda: "none"),  # None is the default size; a string other than "auto" is not
    "aggregate_unknown": ("aggregate", lambda: "max"),
    "aggregate_none": ("aggregate", lambda: None),
    "trajectory_not_a_permutation": ("trajectory", lambda: torch.zeros(B, 4, dtype=torch.long)),
    "trajectory_float": ("trajectory", lambda: tiny_trajectory().float()),
    "trajectory_1d": ("trajectory", lambda: tiny_trajectory()[0]),
    "trajectory_list": ("trajectory", lambda: tiny_trajectory().tolist()),
    "trajectory_empty": ("trajectory", lambda: tiny_trajectory()[:, :0]),
    "alpha_zero": ("alpha", lambda: 0.0),
    "alpha_negative": ("alpha", lambda: -2.0),
    "alpha_nan": ("alpha", lambda: float("nan")),
    "alpha_inf": ("alpha", lambda: math.inf),
    "alpha_string": ("alpha", lambda: "2"),
    "size_zero": ("size", lambda: 0),
    "size_float": ("size", lambda: 2.5),
    "size_none": ("size", lambda: None),
    "grid_empty": ("grid", list),
    "grid_unknown_operation": ("grid", lambda: [("V99", 1, "o")]),
}
MAP_CASES = [(call, bad) for call, (_, accepts) in MAP_CALLS.items() for bad, (arg, _) in MAP_BAD.items()
             if arg in accepts]
_POSITIONAL = {"x", "index", "attributions", "boxes", "masks", "trajectory"}


@pytest.mark.parametrize(("call", "bad"), case_params(MAP_CASES))
def test_map_functions_name_the_bad_argument(call, bad):
    fn, _ = MAP_CALLS[call]
    arg, value = MAP_BAD[bad]
    # maps and boxes/masks of different lengths: the message may name either (the maps come first)
    expected = (arg, "boxes", "masks") if bad == "attributions_batch_mismatch" else arg
    if arg in _POSITIONAL:
        check_case(f"{call}/{bad}", lambda: fn(_map(**{arg: value()})), expected)
    else:
        check_case(f"{call}/{bad}", lambda: fn(_map(), **{arg: value()}), expected)


def test_trajectory_map_of_a_trajectory_that_is_not_a_square_grid_names_it():
    check_case("trajectory_map/trajectory_not_square", lambda: trace.trajectory_map(torch.arange(3).expand(B, 3), 8),
               "trajectory")


@pytest.mark.parametrize("call", list(MAP_CALLS))
def test_the_unspoilt_map_inputs_give_finite_results(call):
    assert finite_result(MAP_CALLS[call][0](_map()))


# ============================================================================================ coverage of the fuzz
ALL_CASES = {f"{c}/{b}" for c, b in MAP_CASES}
REQUIRED = {  # the brief of issue #32: every public map-only callable of the newer areas
    "candidate_images", "localisation_iou", "dice_curve", "localisation_dice", "trajectory_attribution",
    "trajectory_map"}


def test_the_fuzz_covers_every_callable_and_enough_cases():
    covered = {case.split("/")[0] for case in ALL_CASES}
    assert REQUIRED <= covered, sorted(REQUIRED - covered)
    assert len(ALL_CASES) > 80, len(ALL_CASES)
    mine = allow_listed(MAP_CALLS)  # the allow-lists name real cases
    assert mine <= ALL_CASES, sorted(mine - ALL_CASES)
