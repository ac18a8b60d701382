"""The paper's numbers (Wu et al., CVPR 2024), typed from its tables: :data:`TABLE_1` (the attention ablation),
:data:`TABLE_2` (SaCo per method for K = 5, 10, 20) and :data:`SACO` (SaCo at K = 10 per method, the values the
notebooks print beside ours). Notebooks and claims read them from here; nothing else types them."""

from __future__ import annotations

__all__ = ["TABLE_1", "TABLE_2", "TABLE_2_K", "SACO"]

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

# SaCo with K = 10 in the paper's Table 2 (ImageNet, mean of ViT-B, ViT-L, DeiT-B); Random: ≈ 0 by Fig. 4;
# the last-layer variant of Transformer-MM from Table 1.
SACO = {"Random": 0.0, **{m: values[TABLE_2_K.index(10)] for m, values in TABLE_2.items()},
        "Transformer-MM (last layer)": TABLE_1["Transformer-MM (last layer)"]}
"""SaCo at K = 10 per method (Table 2's K = 10 row, Table 1's last layer + gradient, Random's 0 of Fig. 4)."""
