"""TRACE's protocol (faithlab_study.papers.trace): frames hold exactly what the metric computed, spreads and areas
match hand computations, and the paper's image selection picks the first files by name."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

import faithlab as fl
from faithlab.metrics import search as S
from faithlab_study.papers import trace as P
from oracles import Additive, small_cnn


def _additive():
    """Additive model on 4×4 all-ones images with 2×2 patches of distinct weights 1..4 (patch p lowers the logit by
    w_p when deleted)."""
    w = torch.tensor([3.0, 1.0, 4.0, 2.0], dtype=torch.float64)
    pixel_w = w.view(1, 1, 2, 2).repeat_interleave(2, 2).repeat_interleave(2, 3) / 4
    return Additive(pixel_w[0]), torch.ones(2, 1, 4, 4, dtype=torch.float64), w, torch.zeros(2, dtype=torch.int64)


def test_deletion_frames_hold_the_hand_computed_sums_and_curves():
    model, x, w, y = _additive()
    tau = torch.tensor([[1, 3, 0, 2], [2, 0, 3, 1]])  # row 0: ascending weights (the optimum), row 1: its reverse
    scores, curves = P.deletion_frames(model, x, y, {"m": tau}, edge=2, reference="zero", outputs=("logit",),
                                       labels={"model": "additive"})
    total = w.sum().item()  # 10
    lerf0 = [total, total - 1, total - 3, total - 6, 0.0]  # delete weights 1, 2, 3, 4
    morf0 = [total, total - 4, total - 7, total - 9, 0.0]
    row = scores[scores.image == 0].iloc[0]
    assert row.LeRF == pytest.approx(sum(lerf0)) and row.MoRF == pytest.approx(sum(morf0))
    assert row["LeRF − MoRF"] == pytest.approx(sum(lerf0) - sum(morf0))
    assert scores[scores.image == 1].iloc[0]["LeRF − MoRF"] == pytest.approx(sum(morf0) - sum(lerf0))
    assert (scores.output == "logit").all() and (scores.model == "additive").all()
    c = curves[(curves.image == 0) & (curves.criterion == "LeRF")].sort_values("deleted")
    np.testing.assert_allclose(c.value, lerf0)
    np.testing.assert_allclose(c.fraction, [0, 0.25, 0.5, 0.75, 1.0])
    assert len(curves) == 2 * 2 * 5  # criteria × images × points


def test_search_frames_match_the_searches_curves():
    model, x = small_cnn(2, 8, 3), torch.randn(3, 2, 8, 8, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        y = model(x).argmax(1)
    g = S.greedy(model, x, edge=2, objective="le", target=y)
    scores, curves = P.search_frames({"Greedy-Le": g}, labels={"output": "probability"})
    np.testing.assert_allclose(scores.LeRF, g.lerf.double().sum(1).numpy())
    np.testing.assert_allclose(scores["LeRF − MoRF"], (g.lerf.double().sum(1) - g.morf.double().sum(1)).numpy())
    again, _ = P.deletion_frames(model, x, y, {"Greedy-Le": g.trajectory}, edge=2, reference="zero", outputs=("prob",))
    np.testing.assert_allclose(again.LeRF, scores.LeRF, rtol=1e-6)
    np.testing.assert_allclose(again.MoRF, scores.MoRF, rtol=1e-6)
    assert set(curves.criterion) == {"LeRF", "MoRF"} and len(curves) == 2 * 3 * 5


def test_reference_spread_and_normalised_auc_by_hand():
    scores = pd.DataFrame({"method": ["a"] * 4 + ["b"] * 4, "image": [0, 0, 1, 1] * 2,
                           "reference": ["zero", "blur"] * 4, "s": [1.0, 3.0, 2.0, 2.0, 10.0, 10.0, -4.0, 0.0]})
    out = P.reference_spread(scores, value="s", by=["method"]).set_index(["method", "image"])
    assert out.loc[("a", 0), "spread"] == 2.0 and out.loc[("a", 1), "spread"] == 0.0
    assert out.loc[("a", 0), "relative spread"] == pytest.approx(2.0 / 2.0)  # mean |s| of a = 2
    assert out.loc[("b", 1), "relative spread"] == pytest.approx(4.0 / 6.0)  # mean |s| of b = 6
    curves = pd.DataFrame({"edge": [2] * 3 + [4] * 5, "image": [0] * 8,
                           "value": [1.0, 0.5, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0]})
    auc = P.normalised_auc(curves, by=["edge"]).set_index("edge")["AUC"]
    assert auc[2] == pytest.approx(0.5) and auc[4] == pytest.approx(0.8)


def test_random_deletion_frame_averages_the_metric_curves():
    model, x = small_cnn(2, 8, 3), torch.randn(2, 2, 8, 8, generator=torch.Generator().manual_seed(1))
    y = model(x).argmax(1)
    frame = P.random_deletion_frame(model, x, y, edges=(2, 4), references={"zero": "zero"}, n_orders=3,
                                    generator=torch.Generator().manual_seed(5))
    expected = S.random_deletion_curves(model, x, edge=2, n_orders=3, generator=torch.Generator().manual_seed(5),
                                        target=y).mean(1)
    got = frame[frame.edge == 2].sort_values(["image", "deleted"]).value.to_numpy()
    np.testing.assert_allclose(got, expected.double().flatten().numpy(), rtol=1e-6)
    assert set(frame["patch side"]) == {4, 2} and set(frame.t) == {4, 16}


def test_first_by_filename_picks_the_smallest_names_across_class_folders():
    class Folder:
        samples = [("val/n2/ILSVRC2012_val_00000003.JPEG", 1), ("val/n1/ILSVRC2012_val_00000002.JPEG", 0),
                   ("val/n2/ILSVRC2012_val_00000001.JPEG", 1), ("val/n1/ILSVRC2012_val_00000010.JPEG", 0)]

    assert P.first_by_filename(Folder(), 3) == [2, 1, 0]
    with pytest.raises(TypeError, match="dataset"):
        P.first_by_filename(object(), 2)
    with pytest.raises(ValueError, match="n"):
        P.first_by_filename(Folder(), 0)


def test_table1_methods_are_registered_explainers_with_valid_reduce_rules():
    for name, (method, options, reduce) in P.TABLE1_METHODS.items():
        assert method in fl.explainers.available(), name
        assert reduce in fl.perturb.units.REDUCE, name


def test_trajectories_use_each_methods_reduce_rule():
    x = torch.zeros(1, 1, 4, 4)
    a = torch.tensor([[[[-5.0, -5.0, 1.0, 1.0], [-5.0, -5.0, 1.0, 1.0], [2.0, 2.0, 0.0, 0.0],
                        [2.0, 2.0, 0.0, 0.0]]]])
    methods = {"signed": ("gradient", {}, "mean"), "abs": ("gradient", {}, "mean_abs")}
    trajs = P.trajectories({"signed": a, "abs": a}, x, methods, edge=2)
    assert trajs["signed"].tolist() == [[0, 3, 1, 2]]
    assert trajs["abs"].tolist() == [[3, 1, 2, 0]]


def test_deletion_frames_on_a_fraction_grid_sample_the_full_curves():
    model, x, w, y = _additive()
    tau = torch.tensor([[1, 3, 0, 2], [2, 0, 3, 1]])
    _, full = P.deletion_frames(model, x, y, {"m": tau}, edge=2, reference="zero", outputs=("logit",))
    scores, grid = P.deletion_frames(model, x, y, {"m": tau}, edge=2, reference="zero", outputs=("logit",), points=3)
    keep = full[full.deleted.isin([0, 2, 4])].reset_index(drop=True)
    np.testing.assert_allclose(grid.value, keep.value)
    np.testing.assert_array_equal(grid.deleted, keep.deleted)
    np.testing.assert_allclose(grid.fraction, keep.fraction)
    assert scores[scores.image == 0].iloc[0].LeRF == pytest.approx(10 + 7 + 0)
    with pytest.raises(ValueError, match="points"):
        P.deletion_frames(model, x, y, {"m": tau}, edge=2, reference="zero", points=1)


def test_method_maps_pass_the_cam_layer_to_the_layer_methods_only():
    model, x = small_cnn(2, 8, 3), torch.randn(2, 2, 8, 8, generator=torch.Generator().manual_seed(3))
    y = torch.tensor([0, 2])
    methods = {"GC": ("gradcam", {}, "mean"), "Grad": ("saliency", {}, "mean")}
    maps = P.method_maps(model, x, y, methods, batch_size=8, generator=0, layer="1")
    torch.testing.assert_close(maps["GC"], fl.explainers.explain(model, x, y, method="gradcam", layer=model[1]))
    torch.testing.assert_close(maps["Grad"], fl.explainers.explain(model, x, y, method="saliency"))
    # no layer given and the model names none: the last Conv2d, with a warning naming it (fl.models.cam_layer)
    with pytest.warns(UserWarning, match="last Conv2d"):
        fallback = P.method_maps(model, x, y, methods, batch_size=8, generator=0)
    torch.testing.assert_close(fallback["GC"], fl.explainers.explain(model, x, y, method="gradcam", layer=model[0]))


def test_setup_refuses_empty_or_incomplete_settings():
    for bad in ([], [{"name": "a", "model": "small_cnn"}]):
        with pytest.raises(ValueError, match="settings"):
            P.setup(bad, n_images=2)


def test_setup_in_the_paper_profile_loads_the_first_files_and_the_named_models(monkeypatch):
    class Folder(torch.utils.data.Dataset):
        samples = [(f"val/n{i % 3}/ILSVRC2012_val_{9 - i:08d}.JPEG", i % 3) for i in range(6)]

        def __len__(self):
            return len(self.samples)

        def __getitem__(self, i):
            return torch.full((3, 8, 8), float(i)), self.samples[i][1]

    loaded = {}
    monkeypatch.setattr(fl.data, "load", lambda name, **kw: loaded.update(name=name, **kw) or Folder())
    monkeypatch.setattr(fl.models, "pretrained", lambda name, weights: small_cnn(3, 8, 3))
    s = P.setup([], n_images=2, dataset="imagenet_val", data_dir="/data", torchvision_models=("resnet18", "vgg16"))
    assert loaded == {"name": "imagenet_val", "split": "test", "data_dir": "/data"}
    assert s.x[:, 0, 0, 0].tolist() == [5.0, 4.0]  # ILSVRC2012_val_00000004 and …05, the smallest names
    assert s.y.tolist() == [2, 1] and list(s.models) == ["resnet18", "vgg16"]
    assert s.layers == {"resnet18": "layer4", "vgg16": "features.29"}
    assert list(s.info.model) == ["resnet18", "vgg16"]
    assert s.reference.shape == (6, 3, 8, 8)  # IBA's statistics: the first n_reference files (all 6 here)
    small = P.setup([], n_images=2, dataset="imagenet_val", data_dir="/data", torchvision_models=("resnet18",),
                    n_reference=3)
    assert small.reference[:, 0, 0, 0].tolist() == [5.0, 4.0, 3.0] and small.x[:, 0, 0, 0].tolist() == [5.0, 4.0]


def test_method_maps_give_iba_its_statistics_at_the_layer_it_reads():
    model, g = small_cnn(2, 8, 3), torch.Generator().manual_seed(4)
    x, y, data = torch.randn(2, 2, 8, 8, generator=g), torch.tensor([0, 2]), torch.randn(40, 2, 8, 8, generator=g)
    methods = {"IBA": P.TABLE1_METHODS["IBA"]}
    with pytest.raises(ValueError, match="statistics_data"):
        P.method_maps(model, x, y, methods, batch_size=8, generator=0, layer="1")
    maps = P.method_maps(model, x, y, methods, batch_size=8, generator=0, layer="1", statistics_data=data)
    stats = fl.explainers.iba_statistics(model, data, layer="1")
    expected = fl.explainers.explain(model, x, y, method="iba", statistics=stats, layer="1", batch_size=8,
                                     generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(maps["IBA"], expected)


def test_table_layout_is_the_mean_per_reference_model_and_method():
    import pandas as pd

    scores = pd.DataFrame({"reference": ["zero"] * 4 + ["blur"] * 2, "model": ["m"] * 6,
                           "output": ["probability"] * 4 + ["logit"] * 2,
                           "method": ["T-p", "T-p", "Grad", "Grad", "T-p", "Grad"],
                           "LeRF − MoRF": [1.0, 3.0, 0.5, 1.5, 9.0, 9.0]})
    table = P.table_layout(scores, output="probability", methods=["T-p", "Grad"])
    assert table.columns.tolist() == ["reference", "model", "T-p", "Grad"]
    assert table.values.tolist() == [["zero", "m", 2.0, 1.0]]
