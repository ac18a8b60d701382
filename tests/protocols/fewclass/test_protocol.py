"""Few-class Fidelity's protocol: the XAI sets, the method × alteration grid, the frames and the claim helpers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

import faithlab as fl
from faithlab.metrics import fewclass as F
from oracles import small_cnn

P = fl.protocols.fewclass


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


def test_random_lowest_and_alteration_gains_can_come_out_either_way():
    g = np.random.default_rng(0)
    low = _frame({("Random", "none"): list(0.3 + 0.01 * g.standard_normal(12)),
                  ("BP", "none"): list(0.6 + 0.01 * g.standard_normal(12)),
                  ("BP", "SG"): list(0.7 + 0.01 * g.standard_normal(12))})
    verdict, table = P.random_lowest(low)
    assert verdict["m"] == "reproduced" and table["outcome"].tolist() == ["win"]
    high = low.assign(Fid=np.where(low.method == "Random", 0.9, low.Fid))
    assert P.random_lowest(high)[0]["m"] == "not reproduced"
    gains = P.alteration_gains(low, alterations=("SG", "SG²"))
    assert gains[["method", "alteration", "outcome"]].values.tolist() == [["BP", "SG", "win"]]
    assert gains["gain"].item() == pytest.approx(low[low.alteration == "SG"].Fid.mean()
                                                 - low[(low.method == "BP") & (low.alteration == "none")].Fid.mean())
    worse = low.assign(Fid=np.where(low.alteration == "SG", 0.4, low.Fid))
    assert P.alteration_gains(worse)["outcome"].tolist() == ["loss"]


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


# ------------------------------------------------------------------------------- claims as functions (C1 to C5)
V = fl.verdicts.VERDICTS
R, PARTLY, NR, NT, INC = V


def _fid(means: dict, *, models=("m",), alterations=("none",), gain: dict | None = None, n: int = 15,
         replicas: int = 2, noise: float = 0.02, seed: int = 0) -> pd.DataFrame:
    """Per-image Fid of each method (and alteration: + gain[(method, alteration)]) around the given means, for
    ``replicas`` trained replicas of ``n`` images each (a ``replica`` column, as the notebook's frames)."""
    rng = np.random.default_rng(seed)
    rows = []
    for r in range(replicas):
        for m in models:
            for method, mu in means.items():
                for alt in alterations:
                    if method == "Random" and alt != "none":
                        continue
                    shift = (gain or {}).get((method, alt), 0.0)
                    for i, v in enumerate(mu + shift + noise * rng.normal(size=n)):
                        rows.append({"replica": r, "model": m, "method": method, "alteration": alt, "image": i,
                                     "Fid": v})
    return pd.DataFrame(rows)


OTHERS = ["BP", "Deconv", "EG", "IG(min)", "IG(zero)", "IG(max)", "GradCAM"]


@pytest.mark.parametrize("above, below, expected", [
    (7, 0, R),     # Random lower than every method
    (3, 0, PARTLY),  # lower than 3 of 7 and above the 4 others (set below): a third, not two thirds
    (1, 6, NR),    # lower than 1 of 7, above the 6 others
    (0, 7, NR),    # above every method
    (0, 0, INC),   # every method ties with Random maps: undecided, never "not testable" nor a failure
    (4, 0, INC),   # 4 wins and 3 ties: partly (4/7) or reproduced (7/7) depending on the ties
])
def test_claim_c1_gives_every_verdict(above, below, expected):
    means = {n: 0.5 + 0.2 * (i < above) - 0.2 * (above <= i < above + below) for i, n in enumerate(OTHERS)}
    if (above, below) == (3, 0):  # partly: 3 wins, 4 losses (a third of the methods, not two thirds)
        means = {n: 0.7 if i < 3 else 0.3 for i, n in enumerate(OTHERS)}
    frame = _fid({**means, "Random": 0.5})
    if above == below == 0:  # the same per-image Fid for every method
        frame["Fid"] = frame.groupby(["replica", "model", "method", "alteration"]).cumcount() / 30 + 0.3
    claim = P.claim_random_lowest(frame, task="ct", model="m")
    assert claim.verdict == expected, claim.verdict.why
    assert claim.kind == "paper" and claim.units == 30 and claim.verdict.decision
    assert not fl.verdicts._states_decision(claim.rule) and "Random lowest" in claim.rule
    assert len(claim.table) == 7 and claim.table["outcome"].eq("win").sum() == above
    assert claim.claim.startswith("C1 (ct, m)") and claim.paper_value == P.PAPER_C1["ct"]


def test_claim_c1_intervals_resample_the_replicas():
    """A Random maps' deficit that holds in one replica and is reversed in the other is no significant win: the
    two-stage bootstrap draws whole replicas, so the interval spans both; pooled images alone would call it a win."""
    frame = _fid({"BP": 0.5, "Random": 0.5}, n=40, noise=0.01)
    frame.loc[(frame.method == "BP") & (frame.replica == 0), "Fid"] += 0.3
    frame.loc[(frame.method == "BP") & (frame.replica == 1), "Fid"] -= 0.1
    claim = P.claim_random_lowest(frame, task="ct", model="m")
    assert claim.table["outcome"].tolist() == ["tie"] and claim.verdict == INC
    pooled = fl.verdicts.bootstrap_diff(frame[frame.method == "BP"].Fid.to_numpy(),
                                        frame[frame.method == "Random"].Fid.to_numpy())
    assert pooled.outcome == "win"


@pytest.mark.parametrize("uncertain, expected", [(10, R), (9, R), (5, INC), (2, INC), (1, NT), (0, NT)])
def test_claim_c1_is_not_testable_when_the_replacement_leaves_the_model_confident(uncertain, expected):
    """The paper's mechanism, checked before the comparison: MIF falls towards the replacement's 1/N only if the
    replacement makes the model uncertain. With the selection of 10 images, ``uncertain`` of them reaching U < Δ,
    decided on the share's Wilson interval against one half: above it the comparison decides (Random lowest:
    reproduced), below it the claim is not testable here, across it the claim is inconclusive (a share near the
    threshold must not decide testability by sampling noise)."""
    frame = _fid({**{n: 0.7 for n in OTHERS}, "Random": 0.5})
    selection = pd.DataFrame({"model": "m", "image": range(10), "U < Δ": [i < uncertain for i in range(10)]})
    claim = P.claim_random_lowest(frame, task="ct", model="m", selection=selection)
    assert claim.verdict == expected, claim.verdict.why
    assert f"uncertain (U < Δ): {uncertain} of 10 ({uncertain * 10}%)" in claim.premise
    if expected == NT:
        assert claim.verdict.why.startswith("not testable")
    if expected == INC:
        assert "premise is undecided" in claim.verdict.why
    with pytest.raises(ValueError, match="selection must hold"):
        P.claim_random_lowest(frame, task="ct", model="m", selection=selection.assign(model="other"))


@pytest.mark.parametrize("raised, lowered, base, expected", [
    (14, 0, 0.6, R), (7, 7, 0.6, PARTLY), (1, 13, 0.6, NR), (0, 0, 0.6, INC), (14, 0, 1.0, NT)])
def test_claim_c3_gives_every_verdict(raised, lowered, base, expected):
    """14 cells (7 methods × SG, SG²): the gain is significant in ``raised`` of them, a significant drop in
    ``lowered``, a tie (no gain) in the rest: a tie is undecided, so all ties are inconclusive, not a failure. At
    Fid = 1 (the ideal, no noise) nothing can rise: not testable."""
    cells = [(n, a) for n in OTHERS for a in ("SG", "SG²")]
    gain = {**{c: 0.1 for c in cells[:raised]}, **{c: -0.1 for c in cells[raised:raised + lowered]}}
    frame = _fid({**{n: base for n in OTHERS}, "Random": base}, alterations=("none", "SG", "SG²"), gain=gain,
                 noise=0.0 if base == 1.0 else 0.02)
    if base == 1.0:
        frame["Fid"] = frame["Fid"].clip(upper=1.0)
    claim = P.claim_alteration_gains(frame)
    assert claim.verdict == expected, claim.verdict.why
    assert len(claim.table) == 14 and "room to rise" in claim.premise and claim.units == 30
    assert not fl.verdicts._states_decision(claim.rule)


def _ranked(kind: str, *, n: int = 15, replicas: int = 2, seed: int = 3):
    """Per-image Fid and IoU of 7 methods × 4 alterations × 2 models (replicas × n images), the methods' Fid means
    spaced apart; the IoU means follow them (same), reverse them, follow them in half of the model × alteration
    cells and run against them in the rest (weak: mean ρ ≈ 0.11), or carry no method effect (noise)."""
    rng = np.random.default_rng(seed)
    order = np.arange(7) / 10
    anti = order[[3, 6, 5, 4, 2, 1, 0]]  # ρ(order, anti) = 1 − 6·100 / (7·48) ≈ −0.79 (Spearman, 7 methods)
    rows_f, rows_l = [], []
    for r in range(replicas):
        for m in ("a", "b"):
            for k, alt in enumerate(("none", "XRAI", "SG", "SG²")):
                loc_means = {"same": order, "reversed": -order, "weak": order if k < 2 else anti,
                             "noise": np.zeros(7), "few": order}[kind]
                for j, method in enumerate(OTHERS[:3] if kind == "few" else OTHERS):
                    for i in range(n):
                        rows_f.append({"replica": r, "model": m, "method": method, "alteration": alt, "image": i,
                                       "Fid": 0.2 + order[j] + 0.005 * rng.normal()})
                        rows_l.append({"replica": r, "model": m, "method": method, "alteration": alt, "image": i,
                                       "IoU": 0.5 + loc_means[j] + (0.3 if kind == "noise" else 0.005)
                                       * rng.normal()})
    return pd.DataFrame(rows_f), pd.DataFrame(rows_l)


@pytest.mark.parametrize("kind, expected", [("same", R), ("weak", PARTLY), ("reversed", NR), ("noise", INC),
                                            ("few", NT)])
def test_claim_c4_gives_every_verdict(kind, expected):
    f, l = _ranked(kind)
    claim = P.claim_rank_agreement(f, l, task="vehicles", score="IoU", n_boot=500)
    assert claim.verdict == expected, (kind, claim.our_value, claim.verdict.why)
    assert claim.verdict.decision and not fl.verdicts._states_decision(claim.rule)
    if kind != "few":
        assert len(claim.table) == 8 and claim.units == 30 and {"low", "high"} <= set(claim.table.columns)
    if kind == "weak":
        assert float(claim.table["Spearman"].mean()) == pytest.approx((1 + 1 - 600 / 336) / 2)


def test_claim_c4_leaves_an_undefined_rho_out_of_the_mean():
    """A model × alteration whose localisation ranking is constant has no ρ: it is left out of the mean (NaN-aware),
    never read as ρ = 0, which would pull a perfect agreement down to 7/8."""
    f, l = _ranked("same")
    l.loc[(l.model == "a") & (l.alteration == "SG"), "IoU"] = 0.5
    claim = P.claim_rank_agreement(f, l, task="vehicles", score="IoU", n_boot=500)
    assert claim.verdict == R
    assert claim.table["Spearman"].isna().sum() == 1 and "mean ρ 1.00" in claim.our_value


def test_claim_c4_resamples_the_replicas():
    """Two replicas whose localisation rankings disagree (one follows Fid, one reverses it): the interval of the
    mean ρ spans the replicas, so the claim is not decided."""
    f, l = _ranked("same")
    l.loc[l.replica == 1, "IoU"] = 1.0 - l.loc[l.replica == 1, "IoU"]
    claim = P.claim_rank_agreement(f, l, task="vehicles", score="IoU", n_boot=500)
    assert claim.verdict == INC, claim.verdict.why


def _selection(passed: dict, chance: float, n: int = 20, replicas: int = 2) -> pd.DataFrame:
    """Selection rows per (task, model) and replica: the first passed[key] · n images reach U < Δ; every image's
    candidates reach it with probability ``chance``."""
    rows = []
    for (task, model), share in passed.items():
        for r in range(replicas):
            for i in range(n):
                rows.append({"task": task, "model": model, "replica": r, "image": i, "U < Δ": i < round(share * n),
                             "candidates U < Δ": chance})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("passed, chance, expected", [
    ({("a", "m"): 1.0, ("b", "m"): 1.0}, 0.1, R),
    ({("a", "m"): 1.0, ("b", "m"): 0.5}, 0.1, PARTLY),
    ({("a", "m"): 0.3, ("b", "m"): 0.2}, 0.0, NR),
    ({("a", "m"): 1.0, ("b", "m"): 0.9}, 0.1, INC),  # b's share sits on the margin: undecided
    ({("a", "m"): 1.0, ("b", "m"): 0.95}, 0.97, NT),  # any candidate would do: the search is not tested
])
def test_claim_c2_gives_every_verdict(passed, chance, expected):
    claim = P.claim_uncertain_selection(_selection(passed, chance))
    assert claim.verdict == expected, claim.verdict.why
    assert "drawn at random" in claim.premise and len(claim.table) == 2 and claim.units == 40


def _flips(cases: dict, n: int = 20, replicas: int = 2, seed: int = 0) -> pd.DataFrame:
    """flip_frame rows per image: per (task, model) the classic references' mean U, their flipped share and the
    selection's mean U (Δ = 0.2), with a little noise on U."""
    rng = np.random.default_rng(seed)
    rows = []
    for (task, model), (classic_u, flipped, selected_u) in cases.items():
        for r in range(replicas):
            for ref, u in (("zero", classic_u), ("mean", classic_u), ("selected perturbation", selected_u)):
                for i in range(n):
                    rows.append({"task": task, "model": model, "replica": r, "Δ": 0.2, "replacement": ref,
                                 "image": i, "flipped": ref != "selected perturbation" and i < round(flipped * n),
                                 "U": u + 0.01 * rng.normal()})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("cases, binary, expected", [
    ({("ct", "a"): (0.9, 0.5, 0.1), ("ct", "b"): (0.8, 0.6, 0.05)}, ["ct"], R),
    ({("ct", "a"): (0.9, 0.5, 0.1), ("ct", "b"): (0.1, 0.5, 0.05)}, ["ct"], PARTLY),  # b's references not confident
    ({("ct", "a"): (0.9, 0.1, 0.1), ("ct", "b"): (0.9, 0.5, 0.5)}, ["ct"], NR),  # too few flips; b not uncertain
    ({("ct", "a"): (0.9, 0.5, 0.1), ("ct", "b"): (0.2, 0.5, 0.05)}, ["ct"], INC),  # b's U on Δ: undecided
    ({("ct", "a"): (0.9, 0.5, 0.1)}, [], NT),
])
def test_claim_c5a_gives_every_verdict(cases, binary, expected):
    claim = P.claim_class_flip(_flips(cases), binary=binary)
    assert claim.verdict == expected, claim.verdict.why
    assert not fl.verdicts._states_decision(claim.rule)
    if binary:
        assert claim.units == 40 and len(claim.table) == len(cases)


def test_claim_c5b_is_an_exact_study_check():
    good = pd.DataFrame({"N": [2, 3, "real curves"], "min": [0.0, 0.1, 0.2], "max": [1.0, 0.9, 0.8],
                         "ideal": [1.0, 1.0, 1.0], "worst": [0.0, 0.0, 0.0]})
    claim = P.claim_fid_bounds(good)
    assert claim.verdict == R and claim.kind == "study check" and claim.verdict.decision
    assert P.claim_fid_bounds(good.assign(max=[1.0, 1.01, 0.8])).verdict == NR
    assert P.claim_fid_bounds(good.assign(worst=[0.0, 0.1, 0.0])).verdict == NR
    assert "by construction" in claim.premise
    assert fl.verdicts.replicated(P.claim_fid_bounds, good).bootstrap_stability == "exact (no resampling)"


def test_every_claim_takes_a_seed_and_one_replica_s_rows():
    """Each claim function runs on one replica's rows alone and under another bootstrap seed, as
    faithlab.verdicts.replicated calls it: a verdict per replica, and 20 seeds that agree on clear data."""
    f, l = _ranked("same")
    cases = {
        P.claim_random_lowest: ((_fid({**{n: 0.7 for n in OTHERS}, "Random": 0.5}),), {"task": "ct", "model": "m"}),
        P.claim_alteration_gains: ((_fid({n: 0.5 for n in OTHERS}, alterations=("none", "SG"),
                                         gain={(n, "SG"): 0.1 for n in OTHERS}),), {}),
        P.claim_rank_agreement: ((f, l), {"task": "vehicles", "score": "IoU", "n_boot": 300}),
        P.claim_uncertain_selection: ((_selection({("a", "m"): 1.0}, 0.1),), {}),
        P.claim_class_flip: ((_flips({("ct", "a"): (0.9, 0.5, 0.1)}),), {"binary": ["ct"]}),
    }
    for fn, (args, kwargs) in cases.items():
        one = fn(*[a[a.replica == 1] for a in args], **kwargs, seed=7)
        assert one.verdict == R, (fn.__name__, one.verdict.why)
        claim = fl.verdicts.replicated(fn, *args, **kwargs, seed=7, seeds=3)
        # decided on the two replicas pooled, published inconclusive: the house asks 3 trained replicas
        assert claim.raw == R and claim.replica_agreement == "2 of 2 replicas", fn.__name__
        assert claim.verdict == fl.verdicts.INCONCLUSIVE and "2 trained models" in claim.verdict.why, fn.__name__
        assert fl.verdicts.replicated(fn, *args, **kwargs, seed=7, seeds=0, trained=False).verdict == R
        assert claim.bootstrap_stability == "3 of 3 seeds", fn.__name__


def test_replicas_are_trained_with_their_own_seeds_on_the_same_data():
    settings = [{"name": "cnn", "model": "small_cnn", "config": {"width": 4}, "n_epochs": 1}]
    a, b = (P.setup("ct", settings, n_images=4, image_size=16, n_train=96, n_background=3, replica=r) for r in (0, 1))
    seeds = [s.info["training seed"].item() for s in (a, b)]
    assert seeds == [fl.verdicts.replica_seed(0, "ct/cnn", r) for r in (0, 1)]
    wa, wb = (next(iter(s.models["cnn"].parameters())) for s in (a, b))
    assert not torch.equal(wa, wb)  # independently trained
    assert torch.equal(a.background, b.background)  # the stand-in data stay keyed to seed
    with pytest.raises(ValueError, match="replica"):
        P.setup("ct", settings, n_images=4, image_size=16, n_train=96, replica=-1)


def test_task_labels_name_the_stand_ins_and_reach_the_claim_text():
    assert P.task_label("ct") == "CT-like slices (stand-in)"
    assert "stand-in" in P.task_label("vehicles") and "stand-in" not in P.task_label("vehicles", paper=True)
    assert P.task_label("other") == "other"
    frame = _fid({**{n: 0.7 for n in OTHERS}, "Random": 0.5})
    claim = P.claim_random_lowest(frame, task="ct", model="m", task_name=P.task_label("ct"))
    assert claim.claim.startswith("C1 (CT-like slices (stand-in), m)") and claim.paper_value == P.PAPER_C1["ct"]
