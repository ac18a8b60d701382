"""ROAD's conventions where users compare with pytorch-grad-cam (issue 92): the details' differences from the clean
output (grad-cam's MoRF/LeRF form) against a model whose clean output is computed by hand; the refusal of fraction
grids that remove no pixel or all of them at every level; and grad-cam 1.5.7's tie rule against ours, from
``data/road_ties_gradcam.json`` (made once with grad-cam's own code by ``benchmarks/road_ties_reference.py``; no
grad-cam here): the file is checked against grad-cam's rule recomputed with numpy, ours removes round(f·n) pixels
with ties by index (checked against a literal loop), and at grad-cam's counts ours gives grad-cam's numbers back."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import faithlab as fl
from faithlab import perturb

REF = json.loads((Path(__file__).with_name("data") / "road_ties_gradcam.json").read_text())
N = 64   # pixels of the reference's 8×8 maps
PERCENTILES = list(range(10, 100, 10))
# what grad-cam removed per percentile 10, …, 90 (per map): whole tie groups (module docstring of road_curves)
GRADCAM_REMOVED = {"morf": [[64, 64, 64, 64, 32, 32, 24, 16, 8], [64, 64, 64, 40, 32, 32, 20, 20, 8]],
                   "lerf": [[60, 56, 48, 40, 32, 28, 28, 28, 28], [60, 52, 52, 40, 32, 32, 24, 24, 24]]}
OURS_REMOVED = [58, 51, 45, 38, 32, 26, 19, 13, 6]   # round(f·64) at f = 1 − p/100, p = 10, …, 90


def linear(weight, bias, dtype=torch.float64) -> nn.Module:
    model = nn.Sequential(nn.Flatten(), nn.Linear(len(weight[0]), len(weight)))
    with torch.no_grad():
        model[1].weight.copy_(torch.tensor(weight, dtype=torch.float64))
        model[1].bias.copy_(torch.tensor(bias, dtype=torch.float64))
    return model.to(dtype).eval()


def reference_case():
    return (linear(REF["weight"], REF["bias"]), torch.tensor(REF["x"], dtype=torch.float64),
            torch.tensor(REF["cams"], dtype=torch.float64), torch.tensor(REF["targets"]))


def mask(bits: str) -> np.ndarray:
    return np.array([c == "1" for c in bits]).reshape(8, 8)


# ------------------------------------------------------------------------ the differences from the clean output
def test_the_diffs_are_the_outputs_after_imputation_minus_a_clean_output_computed_by_hand():
    # logits (z0, z1) = (mean of x + 1/2, −mean of x − 0) on a 4×4 checkerboard: mean 1/2, so the clean logits are
    # (1, −1/2) and p(class 0) = sigmoid(3/2)
    weight = [[1 / 16] * 16, [-1 / 16] * 16]
    model = linear(weight, [0.5, 0.0])
    board = (torch.arange(4)[:, None] + torch.arange(4)[None]) % 2
    x = board.double().view(1, 1, 4, 4).repeat(2, 1, 1, 1)
    maps = torch.rand(2, 4, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    target = torch.tensor([0, 1])
    hand = {"logit": torch.tensor([1.0, -0.5], dtype=torch.float64),
            "prob": torch.tensor([1 / (1 + math.exp(-1.5)), 1 / (1 + math.exp(1.5))], dtype=torch.float64)}
    for output, clean in hand.items():
        kw = dict(target=target, noise=0.0, output=output)
        d = fl.metrics.road_details(model, x, maps, **kw)
        torch.testing.assert_close(d["clean"], clean, rtol=0, atol=1e-12)
        torch.testing.assert_close(d["morf_diff"], fl.metrics.road_morf(model, x, maps, **kw) - clean, rtol=0,
                                   atol=1e-6)
        torch.testing.assert_close(d["lerf_diff"], fl.metrics.road_lerf(model, x, maps, **kw) - clean, rtol=0,
                                   atol=1e-6)
        torch.testing.assert_close(d["morf_diff_curve"], d["morf"] - clean[:, None], rtol=0, atol=1e-6)
        torch.testing.assert_close(d["lerf_diff_curve"], d["lerf"] - clean[:, None], rtol=0, atol=1e-6)
        torch.testing.assert_close(d["morf_diff_curve"].mean(dim=1), d["morf_diff"], rtol=0, atol=1e-12)
        assert bool((d["morf_diff"].abs() > 1e-3).all())          # imputing the board moves the output
        # ROAD is the same in both forms, and its value is the areas' as before
        assert torch.equal(d["road"], (d["lerf_area"] - d["morf_area"]) / 2)
        torch.testing.assert_close(d["road"], (d["lerf_diff"] - d["morf_diff"]) / 2, rtol=0, atol=1e-12)
    # the default read-out is the probability
    default = fl.metrics.road_details(model, x, maps, target=target, noise=0.0)
    torch.testing.assert_close(default["clean"], hand["prob"], rtol=0, atol=1e-12)


# ------------------------------------------------------------------------------------ grids that cannot rank
@pytest.mark.parametrize("fractions", [[0.0], [1.0], [0.0, 1.0], [1.0, 0.0, 1.0], [0.01, 0.02], [0.03125]])
def test_a_grid_removing_none_or_all_pixels_at_every_level_is_refused_before_any_forward_pass(fractions):
    # 4×4 = 16 pixels: 0.01·16 and 0.02·16 round to 0, and 0.03125·16 = 0.5 rounds (half to even) to 0
    calls = []

    def model(inputs):
        calls.append(inputs.shape[0])
        return inputs.flatten(1)[:, :3]

    x, maps = torch.rand(2, 1, 4, 4), torch.rand(2, 4, 4)
    for metric in (fl.metrics.road, fl.metrics.road_details, fl.metrics.road_morf, fl.metrics.road_lerf):
        with pytest.raises(ValueError, match="fractions") as info:
            metric(model, x, maps, fractions=fractions)
        assert "every level" in str(info.value) and "same" in str(info.value)
    assert calls == []


def test_a_grid_with_some_levels_removing_none_or_all_is_fine():
    torch.manual_seed(0)
    model = fl.models.build("small_cnn", in_channels=1, n_classes=3, width=4).eval()
    x, maps = torch.rand(3, 1, 8, 8), torch.rand(3, 8, 8)
    d = fl.metrics.road_details(model, x, maps, fractions=[0.0, 0.5, 1.0], noise=0.0, output="logit")
    assert bool((d["morf"][:, 1] != d["lerf"][:, 1]).all())      # the one ranking level tells the orders apart
    torch.testing.assert_close(d["morf"][:, 0], d["clean"])       # 0: the clean x, 1: all imputed, both orders
    torch.testing.assert_close(d["morf"][:, 2], d["lerf"][:, 2])
    torch.testing.assert_close(d["road"], (d["lerf"][:, 1] - d["morf"][:, 1]) / 6)


# ------------------------------------------------------------------------- grad-cam's tie rule against ours
def test_the_committed_masks_are_grad_cams_rule_recomputed_with_numpy():
    cams = np.asarray(REF["cams"], dtype=np.float32)
    assert REF["percentiles"] == PERCENTILES and cams.shape == (2, 8, 8)
    for i, cam in enumerate(cams):
        for d in ("morf", "lerf"):
            m = cam if d == "morf" else 1 - cam       # RemoveLeastRelevantFirst thresholds 1 − cam
            for j, p in enumerate(PERCENTILES):
                kept = m < np.percentile(m, p)         # RemoveMostRelevantFirst: np.float32(mask < threshold)
                assert np.array_equal(mask(REF["kept"][d][i][j]), kept), (i, d, p)
                assert REF["kept_count"][d][i][j] == int(kept.sum())
    assert REF["removed_count"] == GRADCAM_REMOVED
    # the ties at work: with a share z of exact zeros, MoRF keeps no pixel for p < 100·z and LeRF removes the zeros
    # and nothing else for p > 100·(1 − z)
    for i, cam in enumerate(cams):
        z = float((cam == 0).mean())
        assert z in (28 / 64, 24 / 64)
        for j, p in enumerate(PERCENTILES):
            if p < 100 * z:
                assert REF["kept_count"]["morf"][i][j] == 0
            if p > 100 * (1 - z):
                assert np.array_equal(mask(REF["kept"]["lerf"][i][j]), cam > 0)


def literal_keep(cam: torch.Tensor, direction: str, count: int) -> torch.Tensor:
    """Ours as the docstring states it: the first ``count`` pixels of the order (MoRF descending, LeRF ascending),
    equal values by lower row-major index, removed (a stable sort); → kept (8, 8) bool."""
    values = cam.flatten().numpy()
    order = np.argsort(-values if direction == "morf" else values, kind="stable")
    keep = np.ones(values.size, dtype=bool)
    keep[order[:count]] = False
    return torch.from_numpy(keep).view(cam.shape)


def test_ours_removes_round_f_n_pixels_with_ties_by_index_not_grad_cams_tie_groups():
    model, x, cams, target = reference_case()
    fractions = [1 - p / 100 for p in PERCENTILES]                  # our level of each of grad-cam's percentiles
    assert [round(f * N) for f in fractions] == OURS_REMOVED
    d = fl.metrics.road_details(model, x, cams, target=target, fractions=fractions, noise=0.0, output="logit")
    for direction in ("morf", "lerf"):
        for i in range(2):
            keeps = torch.stack([literal_keep(cams[i], direction, c) for c in OURS_REMOVED])
            imputed = perturb.noisy_linear_imputation(x[i:i + 1].expand(len(keeps), -1, -1, -1), keeps)
            literal = model(imputed)[:, target[i]]
            torch.testing.assert_close(d[direction][i], literal, rtol=0, atol=1e-9)
            # the other tie order (higher index first) would read something else: the check can tell them apart
            flipped = torch.stack([literal_keep(cams[i].flip(-1).flip(-2), direction, c).flip(-1).flip(-2)
                                   for c in OURS_REMOVED])
            other = model(perturb.noisy_linear_imputation(x[i:i + 1].expand(len(keeps), -1, -1, -1), flipped))
            assert (other[:, target[i]] - literal).abs().max() > 1e-3
            # against grad-cam: the counts differ at every level but p = 50 on these maps; where they are equal
            # the removed sets are too (grad-cam's set is whole tie groups, ours the first c of the order)
            theirs = GRADCAM_REMOVED[direction][i]
            assert [p for p, a, b in zip(PERCENTILES, OURS_REMOVED, theirs) if a == b] == [50]
            for j, p in enumerate(PERCENTILES):
                same = torch.equal(keeps[j], torch.from_numpy(mask(REF["kept"][direction][i][j])))
                assert same == (p == 50), (direction, i, p)
    # so the scores differ: ours at its default fractions against grad-cam's ROADCombined
    logit = REF["values"]["logit"]
    ours = fl.metrics.road(model, x, cams, target=target, noise=0.0, output="logit")
    assert (ours - torch.tensor(logit["combined"], dtype=torch.float64)).abs().min() > 1e-2


@pytest.mark.parametrize("kind", ["logit", "prob"])
def test_at_grad_cams_counts_ours_gives_its_numbers_back(kind):
    """Per map and direction, fractions = grad-cam's removed counts / n (its percentile order): our curves minus
    the clean output are its per-percentile values, their means its averages, and ROAD its ROADCombined; the read-out
    "logit" is its ClassifierOutputTarget, the default ("prob") its ClassifierOutputSoftmaxTarget."""
    model, x, cams, target = reference_case()
    ref = REF["values"][kind]
    kw = {"output": "logit"} if kind == "logit" else {}
    areas = {}
    for direction in ("morf", "lerf"):
        rows = []
        for i in range(2):
            fractions = [c / N for c in GRADCAM_REMOVED[direction][i]]
            d = fl.metrics.road_details(model, x[i:i + 1], cams[i:i + 1], target=target[i:i + 1],
                                        fractions=fractions, noise=0.0, **kw)
            torch.testing.assert_close(d["clean"][0].item(), ref["clean"][i], rtol=0, atol=1e-6)
            want = torch.tensor(ref[f"{direction}_diff"][i], dtype=torch.float64)
            torch.testing.assert_close(d[f"{direction}_diff_curve"][0], want, rtol=0, atol=1e-5)
            torch.testing.assert_close(d[direction][0], torch.tensor(ref[f"{direction}_after"][i],
                                                                    dtype=torch.float64), rtol=0, atol=1e-5)
            rows.append((d[f"{direction}_diff"][0], d[f"{direction}_area"][0]))
        diff, area = (torch.stack(r) for r in zip(*rows))
        average = torch.tensor(ref[f"{direction}_average"], dtype=torch.float64)
        torch.testing.assert_close(diff, average, rtol=0, atol=1e-5)
        # road_morf / road_lerf (the areas) are the output itself: grad-cam's average plus the clean output
        clean = torch.tensor(ref["clean"], dtype=torch.float64)
        torch.testing.assert_close(area, average + clean, rtol=0, atol=1e-5)
        assert (area - average).abs().min() > 1e-2
        areas[direction] = diff
    combined = torch.tensor(ref["combined"], dtype=torch.float64)
    torch.testing.assert_close((areas["lerf"] - areas["morf"]) / 2, combined, rtol=0, atol=1e-5)
