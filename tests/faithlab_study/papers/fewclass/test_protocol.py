"""Few-class Fidelity's protocol: the XAI sets, the method × alteration grid, the frames and the claim helpers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

import faithlab as fl
import faithlab_study as fs
from faithlab import perturb
from faithlab.metrics import fewclass as F
from oracles import small_cnn

P = fs.papers.fewclass


class _Fixed(nn.Module):
    """Predicts class ``image index % n`` for the images of one dataset (via their first pixel), constant logits."""

    def __init__(self, n: int, wrong: set[int] = frozenset()) -> None:
        super().__init__()
        self.n, self.wrong = n, wrong

    def forward(self, x):
        idx = x[:, 0, 0, 0].round().long()
        cls = idx % self.n
        cls = torch.where(torch.tensor([int(i) in self.wrong for i in idx]), (cls + 1) % self.n, cls)
        return torch.nn.functional.one_hot(cls, self.n).float() * 4.0


def test_paper_setup_keeps_images_every_model_gets_right_and_reads_folder_boxes(monkeypatch, tmp_path):
    class Folder(torch.utils.data.Dataset):
        boxes = torch.tensor([[0, 0, 4, 4], [1, 1, 5, 5], [2, 2, 6, 6], [0, 1, 3, 7], [1, 0, 8, 8], [0, 0, 2, 2]])

        def __init__(self):
            self.info = {"mean": (0.485, 0.456, 0.406), "std": (0.229, 0.224, 0.225)}  # as imagenet_vehicles tags it

        def __len__(self):
            return 6

        def __getitem__(self, i):
            return torch.full((3, 8, 8), float(i)), i % 3

    loaded = []
    monkeypatch.setattr(fl.data, "load", lambda name, **kw: loaded.append((name, kw)) or Folder())
    built = {"a": _Fixed(3, wrong={1}), "b": _Fixed(3, wrong={4})}
    monkeypatch.setattr(fl.models, "pretrained", lambda arch, **kw: built[arch])
    s = P.setup("vehicles", [{"name": "A", "arch": "a", "weights_path": "w.pt"},
                             {"name": "B", "arch": "b", "weights_path": "v.pt"}],
                n_images=3, paper=True, data_dir=str(tmp_path), n_background=2)
    assert loaded[0] == ("imagenet_vehicles", {"split": "test", "data_dir": tmp_path / "imagenet_vehicles"})
    assert s.x[:, 0, 0, 0].tolist() == [0.0, 2.0, 3.0]  # 1 and 4 are mispredicted by one model each
    assert torch.equal(s.boxes, Folder.boxes[[0, 2, 3]]) and s.masks is None and s.n_classes == 3
    assert s.info["XAI set"].tolist() == [3, 3] and s.background.shape == (2, 3, 8, 8)
    assert s.normalisation == ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))  # the loader's, for the search
    with pytest.raises(ValueError, match="data_dir"):
        P.setup("ct", [{"name": "A", "arch": "a", "weights_path": "w.pt"}], n_images=2, paper=True)


@pytest.mark.parametrize("task", ["vehicles", "ct"])
def test_book_setup_trains_models_that_get_the_xai_set_right(task):
    settings = [{"name": "cnn", "model": "small_cnn", "config": {"width": 4}, "n_epochs": 1}]
    s = P.setup(task, settings, n_images=4, image_size=16, n_train=96, n_background=3)
    model = s.models["cnn"]
    assert torch.equal(F.predicted_class(model, s.x), s.y)
    # the stand-ins are standardised too: the search gets their statistics and runs on pixels in about [0, 1]
    channels = 3 if task == "vehicles" else 1
    assert s.normalisation is not None and len(s.normalisation[0]) == len(s.normalisation[1]) == channels
    mean, std = (torch.tensor(v).view(1, -1, 1, 1) for v in s.normalisation)
    pixels = s.x * std + mean
    assert float(pixels.amin()) > -0.5 and float(pixels.amax()) < 1.5 and abs(float(s.x.mean())) < 1
    with torch.no_grad():
        width = model(s.x[:1]).shape[1]
    if task == "vehicles":
        assert width == 3 and s.n_classes == 3 and s.x.shape[1] == 3 and s.masks is None
        assert bool(((s.boxes[:, 2] > s.boxes[:, 0]) & (s.boxes[:, 3] > s.boxes[:, 1])).all())
    else:
        assert width == 1 and s.n_classes == 2 and s.x.shape[1] == 1 and s.boxes is None
        assert s.masks.dtype == torch.bool and s.masks.shape == (len(s.x), 16, 16) and bool(s.masks.any())


def test_paper_setup_carries_the_ct_scalar_normalisation_and_refuses_data_without_one(monkeypatch, tmp_path):
    """ct_contrast standardises the stored values with one mean and one std (info['mean'] = (m,)): the search gets
    them, so it runs on the values as stored. A paper dataset without the statistics is refused, not searched in
    its normalised space."""
    x = torch.arange(4.0).view(4, 1, 1, 1).expand(4, 1, 8, 8).contiguous()
    ct = fl.data.TensorData(x, torch.tensor([0, 1, 0, 1]), torch.ones(4, 8, 8, dtype=torch.bool),
                            {"mean": (-420.5,), "std": (310.25,)}, {})
    monkeypatch.setattr(fl.data, "load", lambda name, **kw: ct)
    monkeypatch.setattr(fl.models, "pretrained", lambda arch, **kw: _Fixed(2))
    s = P.setup("ct", [{"name": "A", "arch": "a", "weights_path": "w.pt"}], n_images=4, paper=True,
                data_dir=str(tmp_path), n_background=2)
    assert s.normalisation == ((-420.5,), (310.25,)) and s.masks is not None
    bare = fl.data.TensorData(x, ct.y, ct.mask, {}, {})
    monkeypatch.setattr(fl.data, "load", lambda name, **kw: bare)
    with pytest.raises(ValueError, match=r"ct_contrast data must carry info\['mean'\] and info\['std'\]"):
        P.setup("ct", [{"name": "A", "arch": "a", "weights_path": "w.pt"}], n_images=4, paper=True,
                data_dir=str(tmp_path))


def test_evaluate_task_searches_the_pixels_of_a_normalised_setup(monkeypatch):
    """evaluate_task hands ``Setup.normalisation`` to the candidate search: its selection is the one of the pixels
    (a model on pixels fed through the normalisation), not the one of the normalised values."""
    mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
    m, sd = torch.tensor(mean).view(1, 3, 1, 1), torch.tensor(std).view(1, 3, 1, 1)
    raw = small_cnn(in_channels=3, side=8, n_classes=3)

    class OnPixels(nn.Module):  # the net on pixels, made confident (× 10) so the search must move the images
        def forward(self, z):
            return 10 * raw(z * sd + m)

    pixels = torch.rand(3, 3, 8, 8, generator=torch.Generator().manual_seed(4))
    xn = (pixels - m) / sd
    model = OnPixels().eval()
    y = F.predicted_class(model, xn)
    s = P.Setup("vehicles", {"net": model}, xn, y, torch.tensor([[0, 0, 4, 4]] * 3), None, xn[:2], 3,
                pd.DataFrame(), {"net": None}, (mean, std))
    calls = []
    search = F.select_perturbation
    monkeypatch.setattr(F, "select_perturbation", lambda *a, **kw: calls.append(kw) or search(*a, **kw))
    grid = F.candidate_grid(["V2", "V5", "V15"])  # one scaled blur only: no two candidates coincide on pixels
    frames = P.evaluate_task(s, methods=["Random"], alterations=("none",), grid=grid, fractions=(0, 0.5, 1))
    assert [c["normalisation"] for c in calls] == [(mean, std)]
    want = search(lambda z: 10 * raw(z), pixels, grid=grid)  # the same model on the pixels themselves
    assert frames["selection"]["operation"].tolist() == want["operation"]
    assert frames["selection"]["sigma"].tolist() == want["sigma"]
    assert frames["selection"]["adjustment"].tolist() == want["adjustment"]
    assert frames["selection"]["S"].to_numpy() == pytest.approx(want["s"].numpy(), rel=1e-4, abs=1e-7)


def test_mechanism_frame_is_evaluate_tasks_flips_without_the_maps(monkeypatch):
    """The premise's units on more images than the maps afford: the very rows of evaluate_task's flips frame (the
    same search, references and Δ), with no map computed."""
    torch.manual_seed(0)
    nets = {"a": small_cnn(in_channels=1, side=8, n_classes=3).eval(), "b": small_cnn(in_channels=1, side=8,
                                                                                      n_classes=3).eval()}
    x = torch.rand(3, 1, 8, 8, generator=torch.Generator().manual_seed(5))
    s = P.Setup("vehicles", nets, x, F.predicted_class(nets["a"], x), torch.tensor([[0, 0, 4, 4]] * 3), None, x[:2],
                3, pd.DataFrame(), {"a": None, "b": None})
    grid = F.candidate_grid(["V2", "V5", "V15"])
    want = P.evaluate_task(s, methods=["Random"], alterations=("none",), grid=grid, fractions=(0, 0.5, 1))["flips"]
    monkeypatch.setattr(P.experiments, "method_maps", lambda *a, **kw: pytest.fail("mechanism_frame computed maps"))
    got = P.mechanism_frame(s, grid=grid)
    pd.testing.assert_frame_equal(got, want)
    assert set(got["replacement"]) == {"zero", "mean", "selected perturbation"} and set(got["model"]) == {"a", "b"}


def test_method_maps_follow_the_papers_grid():
    model = small_cnn(in_channels=1, side=8, n_classes=1)
    x = torch.rand(2, 1, 8, 8, generator=torch.Generator().manual_seed(0))
    methods = {k: P.METHODS[k] for k in ("BP", "IG(max)", "Random")}
    maps = P.method_maps(model, x, torch.zeros(2, dtype=torch.long), methods=methods, alterations=["none", "SG", "SG²"],
                         skip=P.NO_SG["ct"], ig_steps=4, sg_samples=3)
    assert sorted(maps) == sorted([("BP", "none"), ("BP", "SG"), ("BP", "SG²"), ("IG(max)", "none"),
                                   ("Random", "none")])
    again = P.method_maps(model, x, torch.zeros(2, dtype=torch.long), methods=methods,
                          alterations=["none", "SG", "SG²"], skip=P.NO_SG["ct"], ig_steps=4, sg_samples=3)
    assert all(torch.equal(maps[k], again[k]) for k in maps)  # seeded
    bp = fl.explainers.explain(model, x, 0, method="gradient")
    assert torch.equal(maps["BP", "none"], bp)
    assert not torch.allclose(maps["BP", "SG"], bp)


def _frame(values: dict[tuple[str, str], list[float]], score: str = "Fid", model: str = "m") -> pd.DataFrame:
    return pd.DataFrame([{"model": model, "method": m, "alteration": a, "image": i, score: v}
                         for (m, a), vs in values.items() for i, v in enumerate(vs)])


def test_wide_table_is_the_cell_mean_in_the_papers_order():
    fid = _frame({("Random", "none"): [0.1, 0.3], ("BP", "SG"): [0.5, 0.7], ("BP", "none"): [0.2, 0.4]})
    table = P.wide_table(fid, "Fid")
    assert table["method"].tolist() == ["BP", "Random"] and list(table.columns) == ["model", "method", "none", "SG"]
    assert table.loc[0, "none"] == pytest.approx(0.3) and table.loc[0, "SG"] == pytest.approx(0.6)
    assert np.isnan(table.loc[1, "SG"])


def test_rank_agreement_is_spearman_over_cells():
    fid = _frame({("BP", "none"): [0.1], ("BP", "SG"): [0.2], ("EG", "none"): [0.3], ("EG", "SG"): [0.4]})
    same = _frame({("BP", "none"): [0.5], ("BP", "SG"): [0.6], ("EG", "none"): [0.7], ("EG", "SG"): [0.8]}, "IoU")
    flipped = same.assign(IoU=-same.IoU)
    assert P.rank_agreement(fid, same, score="IoU")["Spearman"].item() == pytest.approx(1.0)
    assert P.rank_agreement(fid, flipped, score="IoU")["Spearman"].item() == pytest.approx(-1.0)
    assert P.rank_agreement(fid, same, score="IoU")["cells"].item() == 4


def test_flip_frame_reads_the_prediction_after_replacing_every_pixel():
    class Sign(nn.Module):  # one logit = 5·(mean − 0.1): zero image → class 0 with p ≈ 0.62, bright → class 1
        def forward(self, x):
            return 5 * (x.mean(dim=(1, 2, 3)) - 0.1)[:, None]

    x = torch.full((3, 1, 4, 4), 1.0)
    perturbed = torch.full_like(x, 0.1)  # logit 0: p = 1/2 for both classes
    frame = P.flip_frame(Sign().eval(), x, perturbed, references=("zero", "mean"))
    zero = frame[frame.replacement == "zero"]
    assert zero["flipped"].all() and zero["U"].iloc[0] == pytest.approx(abs(torch.sigmoid(torch.tensor(-0.5)).item()
                                                                          - 0.5))
    assert not frame[frame.replacement == "mean"]["flipped"].any()  # the mean of a constant image is the image
    sel = frame[frame.replacement == "selected perturbation"]
    assert sel["U"].max() == pytest.approx(0.0, abs=1e-7)


def test_selection_frame_lays_out_the_winners():
    model = small_cnn(in_channels=1, side=8, n_classes=3)
    x = torch.rand(2, 1, 8, 8, generator=torch.Generator().manual_seed(2))
    sel = F.select_perturbation(model, x, grid=F.candidate_grid(["V1", "V2"]))
    frame = P.selection_frame(sel, labels={"model": "m"})
    assert frame["variation"].tolist() == [f"{o}{a}" for o, a in zip(sel["operation"], sel["adjustment"])]
    assert frame["U"].tolist() == pytest.approx(sel["u"].tolist())
    assert (frame["best U"] <= frame["U"] + 1e-12).all() and frame["Δ"].iloc[0] == 0.075


def test_replicas_are_trained_with_their_own_seeds_on_their_own_data():
    """Each replica trains with its own seed on its own draw of the stand-in data (``data_seed`` of the notebook's
    seed and the replica), the same again for the same replica; replica None keeps the notebook's seed's data."""
    settings = [{"name": "cnn", "model": "small_cnn", "config": {"width": 4}, "n_epochs": 1}]
    a, b, a_again = (P.setup("ct", settings, n_images=4, image_size=16, n_train=96, n_background=3, replica=r)
                     for r in (0, 1, 0))
    seeds = [s.info["training seed"].item() for s in (a, b)]
    assert seeds == [fs.verdicts.replica_seed(0, "ct/cnn", r) for r in (0, 1)]
    wa, wb = (next(iter(s.models["cnn"].parameters())) for s in (a, b))
    assert not torch.equal(wa, wb)  # independently trained
    assert not torch.equal(a.background, b.background)  # on other draws of the stand-in data
    assert torch.equal(a.background, a_again.background) and torch.equal(a.x, a_again.x)
    from faithlab_study.papers.fewclass.setup import _stand_in
    one = P.setup("ct", settings, n_images=4, image_size=16, n_train=96, n_background=3)
    assert torch.equal(one.background, _stand_in("ct", "train", image_size=16, seed=0, n=96).x[:3])
    with pytest.raises(ValueError, match="replica"):
        P.setup("ct", settings, n_images=4, image_size=16, n_train=96, replica=-1)


def test_replicas_score_disjoint_blocks_of_the_test_split():
    """With ``blocks``, replica r's XAI set comes from the test images i of its own split with i mod blocks = r
    only."""
    settings = [{"name": "cnn", "model": "small_cnn", "config": {"width": 4}, "n_epochs": 1}]
    from faithlab_study.papers.fewclass.setup import _stand_in
    for r in range(3):
        test = _stand_in("ct", "test", image_size=16, seed=fs.verdicts.replication.data_seed(0, r), n=None)
        x_all, _ = fl.data.to_tensors(test)
        s = P.setup("ct", settings, n_images=4, image_size=16, n_train=96, n_background=3, replica=r, blocks=3)
        index = [int((x_all == img).flatten(1).all(1).nonzero()[0]) for img in s.x]
        assert all(i % 3 == r for i in index), (r, index)
        assert len(set(index)) == len(index)
    with pytest.raises(ValueError, match="blocks"):
        P.setup("ct", settings, n_images=4, image_size=16, n_train=96, replica=0, blocks=0)


def test_task_labels_name_the_stand_ins():
    assert P.task_label("ct") == "CT-like slices (stand-in)"
    assert "stand-in" in P.task_label("vehicles") and "stand-in" not in P.task_label("vehicles", paper=True)
    assert P.task_label("other") == "other"


def test_evaluate_task_returns_the_flips_of_the_mechanism_premise():
    model = small_cnn(in_channels=1, side=8, n_classes=1)
    x = torch.rand(3, 1, 8, 8, generator=torch.Generator().manual_seed(5))
    y = F.predicted_class(model, x)
    s = P.Setup("ct", {"net": model}, x, y, None, torch.ones(3, 8, 8, dtype=torch.bool), x[:2], 2, pd.DataFrame(),
                {"net": None}, None)
    frames = P.evaluate_task(s, methods=["Random"], alterations=("none",), grid=F.candidate_grid(["V1"]),
                             fractions=(0, 0.5, 1))
    flips = frames["flips"]
    assert sorted(flips["replacement"].unique()) == ["mean", "selected perturbation", "zero"]
    assert (flips["Δ"] == 0.05).all() and len(flips) == 9 and set(flips["model"]) == {"net"}
    sel = flips[flips.replacement == "selected perturbation"].sort_values("image")
    assert sel["U"].to_numpy() == pytest.approx(frames["selection"]["U"].to_numpy(), abs=1e-6)


def test_fid_frame_silences_the_constant_map_warning_and_keeps_the_flags():
    """The book's protocol (an all-zero Grad-CAM is possible) reports the flags, as SaCo's and F-Fidelity's do:
    its notebooks must print no warning."""
    import warnings

    from faithlab_study.papers import fewclass as protocol

    model = small_cnn(in_channels=2, side=8, n_classes=3)
    x = torch.rand(2, 2, 8, 8, generator=torch.Generator().manual_seed(0))
    maps = {("GradCAM", "none"): torch.zeros(2, 8, 8), ("Random", "none"): torch.rand(2, 8, 8)}
    with warnings.catch_warnings():
        warnings.simplefilter("error", perturb.ConstantMapWarning)
        frame, details = protocol.fid_frame(model, x, maps, x.flip(-1), fractions=[0.0, 0.5, 1.0])
    assert details["GradCAM", "none"]["constant"].tolist() == [True, True]
    assert details["Random", "none"]["constant"].tolist() == [False, False]
    assert len(frame) == 4
