"""The paper's numbers (Wu et al., CVPR 2024), typed from its text and tables: :data:`TABLE_1` (the attention
ablation), :data:`TABLE_2` (SaCo per method for K = 5, 10, 20), :data:`SACO` (SaCo at K = 10 per method, the values
the notebooks print beside ours) and :data:`FIG_2_SACO_VS_EXISTING` / :data:`FIG_2_AMONG_EXISTING` (the rank
correlations of §5.1, Fig. 2). Notebooks and claims read them from here; nothing else types them. The margins of the
chapter's registered rules are derived from them (:data:`MARGINS`), and a test
recomputes each registered margin from these constants."""

from __future__ import annotations

__all__ = ["TABLE_1", "TABLE_2", "TABLE_2_K", "SACO", "METHODS", "FIG_2_SACO_VS_EXISTING", "FIG_2_AMONG_EXISTING",
           "MARGINS"]

TABLE_1 = {"Raw Attention": 0.1835, "Rollout": 0.2453, "Transformer-MM (last layer)": 0.3783,
           "Transformer-MM": 0.4558}
"""Table 1 (ablation on attention-based explanation methods, ImageNet, mean of three ViTs): SaCo of the last layer's
attention, the all-layer aggregation, the last layer with gradient, and both (Transformer-MM)."""

TABLE_2_K = (5, 10, 20)
"""The numbers of groups K of Table 2's rows, in the order of :data:`TABLE_2`'s tuples."""

# The paper's Table 2 (ImageNet, mean of three ViTs) for K = 5, 10, 20; Random and the last-layer variant not listed.
TABLE_2 = {"Integrated Gradients": (0.1585, 0.1647, 0.1785), "Grad-CAM (attention)": (0.1659, 0.1142, 0.1000),
           "LRP": (0.0246, 0.0120, 0.0054), "Partial LRP": (0.4628, 0.3066, 0.2282),
           "Transformer Attribution": (0.5680, 0.3902, 0.2906), "Conservative LRP": (0.0544, 0.0155, -0.0201),
           "Raw Attention": (0.3200, 0.1835, 0.1411), "Rollout": (0.3372, 0.2453, 0.1956),
           "Transformer-MM": (0.6041, 0.4558, 0.3651), "ATTCAT": (0.3178, 0.3629, 0.3617)}
"""Table 2: SaCo per explanation method (our method names) for K = 5, 10, 20 (:data:`TABLE_2_K`)."""

METHODS = tuple(TABLE_2)
"""The paper's ten explanation methods (§4.2, Table 2's columns): the methods its claims about "most methods", "best"
and "worst" range over (Random and the last-layer variant of Transformer-MM are not among them)."""

# SaCo with K = 10 in the paper's Table 2 (ImageNet, mean of ViT-B, ViT-L, DeiT-B); Random: ≈ 0 by Fig. 4;
# the last-layer variant of Transformer-MM from Table 1.
SACO = {"Random": 0.0, **{m: values[TABLE_2_K.index(10)] for m, values in TABLE_2.items()},
        "Transformer-MM (last layer)": TABLE_1["Transformer-MM (last layer)"]}
"""SaCo at K = 10 per method (Table 2's K = 10 row, Table 1's last layer + gradient, Random's 0 of Fig. 4)."""

FIG_2_SACO_VS_EXISTING = (0.18, 0.22)
"""§5.1 (Fig. 2): "the correlation scores between our SaCo and other existing metrics range from 0.18 to 0.22"
(rank correlation across samples, averaged over data sets, models and methods)."""
FIG_2_AMONG_EXISTING = 0.4764
"""§5.1 (Fig. 2): "the average intra-correlation among the existing metrics themselves is significantly higher
(0.4764)"."""

MARGINS = {
    "SaCo difference": round((TABLE_1["Rollout"] - TABLE_1["Raw Attention"]) / 2, 4),
    "weak correlation": round((max(FIG_2_SACO_VS_EXISTING) + FIG_2_AMONG_EXISTING) / 2, 4),
    "agreement gap": round((FIG_2_AMONG_EXISTING - max(FIG_2_SACO_VS_EXISTING)) / 2, 4),
}
"""The margins (smallest effects of interest) of the rules, from the paper's numbers:

- ``SaCo difference`` 0.0309: half the smallest SaCo gain the paper reads as an improvement (Table 1: all-layer
  aggregation without gradient, Rollout − Raw Attention = 0.2453 − 0.1835 = 0.0618) — every SaCo difference of the
  chapter (Random near 0, methods above Random, the Table 1 gains, the decline over K, the case study's separation);
- ``weak correlation`` 0.3482: the midpoint between SaCo's largest correlation with an existing metric (0.22) and the
  existing metrics' mutual correlation (0.4764) — a correlation nearer the paper's SaCo values than the agreement
  it contrasts them with is "weak";
- ``agreement gap`` 0.1282: half the paper's smallest gap between that agreement and SaCo's correlations
  (0.4764 − 0.22)."""
