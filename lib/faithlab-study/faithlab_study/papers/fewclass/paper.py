"""The paper's numbers (Few-class Fidelity, Marchadour et al.), typed from its tables: :data:`TABLE_1` (ImageNet
vehicles) and :data:`TABLE_2` (CT contrast agent), the Few-class Fid of every model × method × alteration. The
claims quote them (:data:`PAPER_C1`, :func:`random_lowest_text`, :func:`alteration_gains_text`); nothing else types
them.

Each table maps ``(model, method)`` to the four columns of the paper, in the order of :data:`COLUMNS` (no
alteration, +XRAI, +SG, +SG²); ``None`` where the paper leaves the cell empty (Random's altered cells; SG and SG² of
Deconv and IG(max) on CT)."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["COLUMNS", "TABLE_1", "TABLE_2", "TABLES", "random_lowest_text", "alteration_gains_text", "PAPER_C1",
           "random_gaps", "sg_gains"]

COLUMNS = ("none", "XRAI", "SG", "SG²")
"""The alterations of the tables' columns (No alter., +XRAI, +SG, +SG²), named as our alterations."""

TABLE_1 = {  # Few-class Fidelity Table 1 (ImageNet vehicles); columns No alter., +XRAI, +SG, +SG²
    ("ResNet-18", "BP"): (0.614, 0.603, 0.725, 0.713),
    ("ResNet-18", "Deconv"): (0.635, 0.632, 0.658, 0.633),
    ("ResNet-18", "EG"): (0.714, 0.697, 0.737, 0.727),
    ("ResNet-18", "IG(min)"): (0.635, 0.650, 0.667, 0.669),
    ("ResNet-18", "IG(zero)"): (0.698, 0.684, 0.723, 0.720),
    ("ResNet-18", "IG(max)"): (0.686, 0.691, 0.706, 0.699),
    ("ResNet-18", "GradCAM"): (0.683, 0.688, 0.676, 0.676),
    ("ResNet-18", "Random"): (0.595, None, None, None),
    ("DenseNet-121", "BP"): (0.611, 0.592, 0.720, 0.704),
    ("DenseNet-121", "Deconv"): (0.680, 0.716, 0.679, 0.677),
    ("DenseNet-121", "EG"): (0.727, 0.703, 0.746, 0.743),
    ("DenseNet-121", "IG(min)"): (0.638, 0.656, 0.678, 0.682),
    ("DenseNet-121", "IG(zero)"): (0.703, 0.677, 0.719, 0.720),
    ("DenseNet-121", "IG(max)"): (0.685, 0.686, 0.711, 0.700),
    ("DenseNet-121", "GradCAM"): (0.675, 0.677, 0.684, 0.685),
    ("DenseNet-121", "Random"): (0.596, None, None, None),
}
"""Table 1 (ImageNet vehicles, ResNet-18 and DenseNet-121): ``{(model, method): Fid per column of :data:`COLUMNS`}``."""

TABLE_2 = {  # Few-class Fidelity Table 2 (CT contrast agent); SG, SG² not applied to Deconv and IG(max)
    ("ResNet-50", "BP"): (0.827, 0.918, 0.833, 0.904),
    ("ResNet-50", "Deconv"): (0.668, 0.771, None, None),
    ("ResNet-50", "EG"): (0.817, 0.907, 0.813, 0.891),
    ("ResNet-50", "IG(min)"): (0.875, 0.918, 0.846, 0.915),
    ("ResNet-50", "IG(max)"): (0.646, 0.728, None, None),
    ("ResNet-50", "GradCAM"): (0.918, 0.871, 0.843, 0.846),
    ("ResNet-50", "Random"): (0.615, None, None, None),
    ("Xception", "BP"): (0.764, 0.930, 0.752, 0.905),
    ("Xception", "Deconv"): (0.679, 0.836, None, None),
    ("Xception", "EG"): (0.777, 0.911, 0.781, 0.891),
    ("Xception", "IG(min)"): (0.837, 0.923, 0.782, 0.876),
    ("Xception", "IG(max)"): (0.665, 0.786, None, None),
    ("Xception", "GradCAM"): (0.931, 0.914, 0.911, 0.911),
    ("Xception", "Random"): (0.551, None, None, None),
}
"""Table 2 (CT contrast agent, ResNet-50 and Xception), laid out as :data:`TABLE_1`."""

TABLES = {"vehicles": TABLE_1, "ct": TABLE_2}
"""The paper's table of each task (our task names)."""


def random_lowest_text(table: Mapping) -> str:
    """Random's unaltered Fid and the lowest other method's, per model of ``table`` (laid out as :data:`TABLE_1`),
    e.g. ``"Random 0.595 / 0.596; lowest unaltered method 0.614 / 0.611 (BP)"``."""
    unaltered: dict[str, dict[str, float]] = {}
    for (model, method), values in table.items():
        unaltered.setdefault(model, {})[method] = values[COLUMNS.index("none")]
    rows = list(unaltered.values())
    lowest = [min((m for m in row if m != "Random"), key=row.get) for row in rows]
    random = " / ".join(f"{row['Random']:.3f}" for row in rows)
    others = " / ".join(f"{row[m]:.3f}" for row, m in zip(rows, lowest))
    return f"Random {random}; lowest unaltered method {others} ({' / '.join(dict.fromkeys(lowest))})"


def alteration_gains_text(table: Mapping, where: str) -> str:
    """How many model × method cells of ``table`` (laid out as :data:`TABLE_1`, Random aside) SmoothGrad and
    SmoothGrad² raise the unaltered Fid in, e.g. ``"SG raises the mean Fid in 12 of 14 model × method cells, SG² in
    11 (Table 1)"``."""
    cells = [v for (_, method), v in table.items() if method != "Random"]
    raised = {a: sum(v[COLUMNS.index(a)] is not None and v[COLUMNS.index(a)] > v[0] for v in cells)
              for a in ("SG", "SG²")}
    return (f"SG raises the mean Fid in {raised['SG']} of {len(cells)} model × method cells, SG² in {raised['SG²']} "
            f"({where})")


PAPER_C1 = {task: random_lowest_text(table) for task, table in TABLES.items()}
"""The paper's C1 values per task (Tables 1–2, the two models): Random's Fid and the lowest other method's."""


def random_gaps(tables: Mapping[str, Mapping] = TABLES) -> dict[str, float]:
    """Per model of ``tables``: the gap between the lowest unaltered method other than Random and Random (Tables
    1–2: 0.019, 0.015, 0.031, 0.114). Half the smallest is C1's margin (its registered rule)."""
    gaps = {}
    for table in tables.values():
        for model in dict.fromkeys(m for m, _ in table):
            row = {meth: v[COLUMNS.index("none")] for (m, meth), v in table.items() if m == model}
            gaps[model] = min(v for meth, v in row.items() if meth != "Random") - row["Random"]
    return gaps


def sg_gains(table: Mapping = TABLE_1) -> list[float]:
    """The gains Fid(+SG) − Fid(none) and Fid(+SG²) − Fid(none) of every model × method cell of ``table`` that has
    them (Random aside). Half the median of the positive ones is C3's margin (its registered rule)."""
    return [v[COLUMNS.index(a)] - v[COLUMNS.index("none")] for (_, method), v in table.items() if method != "Random"
            for a in ("SG", "SG²") if v[COLUMNS.index(a)] is not None]
