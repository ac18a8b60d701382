"""The paper's numbers (TRACE, Table 1), typed from its table: :data:`TABLE1_RESNET18`, the rows (i) ResNet-18 of the
three references. The notebook prints it beside ours and the claims quote it; nothing else types them."""

from __future__ import annotations

import pandas as pd

__all__ = ["TABLE1_RESNET18", "TABLE1_METHOD_COLUMNS", "versus_best"]

TABLE1_RESNET18 = pd.DataFrame(  # Table 1, rows (i) ResNet-18
    [["zero", 24.98, 31.69, 11.52, 16.24, 15.92, 14.52, 13.41, 15.39, 10.28, 8.21],
     ["mean", 25.64, 32.51, 11.45, 16.22, 15.66, 14.57, 12.96, 15.40, 10.51, 8.48],
     ["blur", 27.34, 33.84, 10.93, 17.38, 16.41, 16.01, 14.98, 16.24, 10.04, 7.57]],
    columns=["reference", "T-y", "T-p", "Grad", "GC", "IBA", "RISE", "EP", "EBP", "IG", "IxG"])
"""Table 1 (ILSVRC2012, t = 49, probabilities): ΣLeRF − ΣMoRF of ResNet-18 (rows (i)) per reference (zero, mean,
blur), for TRACE-y, TRACE-p and the eight attribution methods."""

TABLE1_METHOD_COLUMNS = ["Grad", "GC", "IBA", "RISE", "EP", "EBP", "IG", "IxG"]
"""The attribution methods among :data:`TABLE1_RESNET18`'s columns (the others: the reference and TRACE's two)."""


def versus_best(reference: str = "zero") -> str:
    """TRACE-p's value against the best attribution method's in :data:`TABLE1_RESNET18`'s row of ``reference``, and
    their ratio (e.g. ``"31.69 vs best 16.24, ×1.95"``)."""
    row = TABLE1_RESNET18.set_index("reference").loc[reference]
    tp, best = float(row["T-p"]), float(row[TABLE1_METHOD_COLUMNS].max())
    return f"{tp:.2f} vs best {best:.2f}, ×{tp / best:.2f}"
