"""TRACE's Monte-Carlo draws are keyed to (notebook seed, setting, replica, draw): the random deletion test's orders
of replica r of model m come from ``draw_seed(seed, m, r, "orders")`` (random_test), the searches' from
``keyed_seed(seed, model key, …, r)`` (table1, searches), never from a sum; two replicas, two models and two
notebook seeds draw apart, the same key draws the same."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import torch
from torch import nn

import faithlab_study as fs
from faithlab_study.verdicts.replication import draw_seed

P = fs.papers.trace
NOTEBOOKS = Path(__file__).resolve().parents[4] / "notebooks" / "trace"


def frame(generator: int) -> pd.DataFrame:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(16, 8), nn.Tanh(), nn.Linear(8, 2)).eval()
    x = torch.rand(2, 1, 4, 4, generator=torch.Generator().manual_seed(1))
    return P.random_deletion_frame(model, x, torch.tensor([0, 1]), edges=(2,), references={"zero": "zero"},
                                   n_orders=2, generator=generator)


def test_random_orders_follow_seed_model_and_replica():
    a = frame(draw_seed(0, "cnn", 0, "orders"))
    pd.testing.assert_frame_equal(a, frame(draw_seed(0, "cnn", 0, "orders")))  # the same key: the same orders
    for other in (draw_seed(0, "cnn", 1, "orders"), draw_seed(1, "cnn", 0, "orders"), draw_seed(0, "mlp", 0, "orders")):
        assert not a["value"].equals(frame(other)["value"])  # another replica, notebook seed or model


def test_the_notebooks_key_every_generator_and_never_sum_a_seed():
    text = {p.name: p.read_text() for p in NOTEBOOKS.glob("*.py")}
    assert 'draw_seed(seed, m, r, "orders")' in text["random_test.py"]
    for name, source in text.items():
        assert not re.search(r"manual_seed\(seed\s*[+*]", source), name  # a summed seed: another seed's stream
        assert not re.search(r"generator=seed\b", source), name  # the same draws for every replica
