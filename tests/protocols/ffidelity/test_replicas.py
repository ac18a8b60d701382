"""F-Fidelity's replicated claims resample the trained replicas: for each claim function of the notebooks
``ffidelity/series_text`` and ``ffidelity/images_variants`` (claim_series_ranking, claim_text_equivalence,
claim_ranking, claim_maps_preserved, claim_map_preferred), replicas whose effects disagree strongly give an interval
that straddles the margin (inconclusive), whereas the very same rows read as one trained model are decided."""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

import faithlab as fl

F = fl.protocols.ffidelity
R, P, N, T, I = fl.verdicts.VERDICTS
TS = ("Fidelity", "ROAR", "R-Fidelity", "F-Fidelity")
N_SEEDS, N_LEVELS = 6, 5  # 30 units per replica


def ranking_frames(effects: dict[int, dict[str, float]], *, group: str = "model", value: str = "M",
                   noise: float = 0.02, target_rank: float = 1.5):
    """micro_cells-like rows of one ``group == value`` and a permuted-order null: per replica r and method m, a micro
    rank of ``target_rank + effects[r][m]`` (the target's own effect 0) plus noise, an oriented micro correlation of
    0.5 + the same effect (Fidelity's well below the ideal +1) and a GT micro correlation far above its chance range."""
    rng = np.random.default_rng(0)
    rows = []
    for r, effect in effects.items():
        for m, d in effect.items():
            for s in range(N_SEEDS):
                for lv in range(N_LEVELS):
                    e = noise * rng.normal()
                    rows.append({group: value, "method": m, "replica": r, "seed": s, "level": lv,
                                 "micro rank": target_rank + d + e, "oriented micro": 0.5 - d / 4 + e,
                                 "GT micro": 0.9, "LeRF micro": 0.9})
    cells = pd.DataFrame(rows)
    methods = list(dict.fromkeys(cells["method"]))
    null = pd.DataFrame([{group: value, "method": m, "draw": i, "GT micro": v}
                         for m in methods for i, v in enumerate(np.linspace(-0.5, 0.5, 200))])
    return cells, null


# each competitor's micro rank minus the target's: +1 in replica 0 (the target better), −0.2 in replica 1 (worse)
SPLIT = {0: {"F-Fidelity": 0.0, **{m: 1.0 for m in TS[:3]}}, 1: {"F-Fidelity": 0.0, **{m: -0.2 for m in TS[:3]}}}


def test_claim_series_ranking_resamples_the_replicas():
    cells, null = ranking_frames(SPLIT)
    nested = F.claim_series_ranking(cells, null, models=["M"])
    assert nested.verdict == I, nested.verdict.why
    assert set(nested.table["outcome"]) == {"tie"} and (nested.table["low"] < 0).all()
    assert "2 independently trained replicas" in nested.rule and nested.units == 60
    one = F.claim_series_ranking(cells.assign(replica=0), null, models=["M"])  # the same rows as one model
    assert one.verdict == R, one.verdict.why
    assert set(one.table["outcome"]) == {"win"} and "one trained model" in one.rule
    assert F.claim_series_ranking(cells.drop(columns="replica"), null, models=["M"]).verdict == R


def test_claim_ranking_resamples_the_replicas():
    cells, null = ranking_frames(SPLIT, group="explainer", value="E")
    nested = F.claim_ranking(cells, null, group="explainer", value="E", methods=list(TS))
    assert nested.verdict == I, nested.verdict.why
    one = F.claim_ranking(cells.assign(replica=0), null, group="explainer", value="E", methods=list(TS))
    assert one.verdict == R, one.verdict.why


def test_claim_text_equivalence_resamples_the_replicas():
    """F-Fidelity − Fidelity is −0.3 in replica 0 and +0.3 in replica 1: as one model the mean 0 lies well inside
    the equivalence margin ±0.1; over replicas the interval reaches both ±0.3, across the margin."""
    rng = np.random.default_rng(1)
    rows = []
    for r, gap in ((0, -0.3), (1, 0.3)):
        for s in range(N_SEEDS):
            for lv in range(N_LEVELS):
                for m, value in (("Fidelity", 0.5), ("R-Fidelity", 0.5), ("F-Fidelity", 0.5 + gap)):
                    rows.append({"model": "T", "method": m, "replica": r, "seed": s, "level": lv,
                                 "micro rank": 1.0, "oriented micro": value + 0.02 * rng.normal(), "GT micro": 0.9})
    cells = pd.DataFrame(rows)
    null = pd.DataFrame([{"model": "T", "method": m, "draw": i, "GT micro": v}
                         for m in ("Fidelity", "R-Fidelity", "F-Fidelity")
                         for i, v in enumerate(np.linspace(-0.5, 0.5, 200))])
    nested = F.claim_text_equivalence(cells, null, models=["T"])
    assert nested.verdict == I, nested.verdict.why
    assert nested.table["outcome"].iloc[0] == "undecided" and nested.units == 60
    assert nested.table["low"].iloc[0] < -0.1 < 0.1 < nested.table["high"].iloc[0]
    one = F.claim_text_equivalence(cells.assign(replica=0), null, models=["T"])
    assert one.verdict == R, one.verdict.why
    assert one.table["outcome"].iloc[0] == "equivalent"


def map_pair(noise: float, *, n: int = 40, pixels: int = 64, seed: int = 0):
    """Original maps and fine-tuned maps = the original plus noise of relative size ``noise``."""
    g = np.random.default_rng(seed)
    a = g.random((n, pixels))
    b = (1 - noise) * a + noise * g.random((n, pixels))
    return torch.tensor(a, dtype=torch.float32), torch.tensor(b, dtype=torch.float32)


def test_claim_maps_preserved_resamples_the_replicas():
    """One replica keeps its maps (ρ ≈ 0.99), the other mostly loses them: as one model the mean lies between the
    margins with a narrow interval (partly); over the two replicas the interval spans both margins."""
    kept, _ = F.map_agreement(*map_pair(0.1, seed=1), n_draws=50)
    lost, nulls = F.map_agreement(*map_pair(0.8, seed=2), n_draws=200)
    frame = pd.concat([kept.assign(replica=0), lost.assign(replica=1)], ignore_index=True)
    nested = F.claim_maps_preserved(frame, nulls, value="toy", seed=2)
    assert nested.verdict == I, nested.verdict.why
    assert "2 replica(s)" in nested.rule and nested.units == 80
    one = F.claim_maps_preserved(frame.assign(replica=0), nulls, value="toy", seed=2)
    assert one.verdict == P, one.verdict.why


def test_claim_map_preferred_resamples_the_replicas():
    """GradCAM − Saliency: FFid+ +0.1 and FFid− −0.05 in replica 0, the reverse (−0.03, +0.015) in replica 1: as
    one model both parts hold; over the two replicas both intervals hold 0."""
    rng = np.random.default_rng(0)
    rows = []
    for r, (dp, dm) in ((0, (0.1, -0.05)), (1, (-0.03, 0.015))):
        base_p, base_m = rng.uniform(0.1, 0.3, 60), rng.uniform(0.05, 0.15, 60)
        for name, p, m in (("GradCAM", dp, dm), ("Saliency", 0.0, 0.0)):
            rows += [{"replica": r, "case": i + 1, "explainer": name, "FFid+": base_p[i] + p + 0.005 * rng.normal(),
                      "FFid−": base_m[i] + m + 0.005 * rng.normal()} for i in range(60)]
    frame = pd.DataFrame(rows)
    nested = F.claim_map_preferred(frame, seed=3)
    assert nested.verdict == I, nested.verdict.why
    assert set(nested.table["outcome"]) == {"tie"} and nested.units == 120
    one = F.claim_map_preferred(frame.assign(case=frame["case"] + 100 * frame["replica"], replica=0), seed=3)
    assert one.verdict == R, one.verdict.why
    assert one.units == 120


def test_map_agreement_over_replicas_stacks_the_replicas_and_averages_each_null_draw():
    """The per-image frames of every replica with a replica column; each null draw is the mean over the replicas of
    map_agreement's draw (the same permutations in every replica), so one replica gives map_agreement's own null."""
    import numpy as np
    import torch

    import faithlab as fl

    P = fl.protocols.ffidelity
    g = torch.Generator().manual_seed(0)
    pairs = {r: (torch.rand(6, 8, 8, generator=g), torch.rand(6, 8, 8, generator=g)) for r in range(2)}
    frame, nulls = P.map_agreement_over_replicas(pairs, seed=3, n_draws=50)
    own = {r: P.map_agreement(*pairs[r], seed=3, n_draws=50) for r in pairs}
    assert frame["replica"].tolist() == [0] * 6 + [1] * 6
    for stat, null in nulls.items():
        expected = (np.asarray(own[0][1][stat].draws) + np.asarray(own[1][1][stat].draws)) / 2
        assert np.allclose(null.draws, expected)
    single, single_nulls = P.map_agreement_over_replicas({0: pairs[0]}, seed=3, n_draws=50)
    assert all(np.allclose(single_nulls[s].draws, own[0][1][s].draws) for s in single_nulls)
    import pytest
    with pytest.raises(ValueError, match="pairs"):
        P.map_agreement_over_replicas({})
