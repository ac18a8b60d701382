"""Replication, in one place: the trained model is the unit of replication, so every claim about trained models
rests on R independently trained replicas per setting (ARCHITECTURE: "seeds keyed to the setting's name and replica
index").

- :func:`replicas` — the replica loop the notebooks call: one :class:`Replica` per index, its training seed derived
  here (:func:`replica_seed`) and nowhere else.

The walk of ``seed``, one name and one route: a notebook's ``seed`` is the data's seed (the split, the generated
data, the explainers' and bootstraps' generators) and the root of every derived seed. A trained model's seed is
always ``replica.seed`` of a :class:`Replica` from :func:`replicas`: every set-up or recipe function that trains takes
it as the ``Replica`` object under one argument name, ``replica``, and uses ``replica.seed`` for the training config
(``replica.index`` where it needs the index). The convention for a single model: ``replica=None`` trains with the
data's ``seed`` itself (:func:`training_seed`), the value the study's single-model paths always trained with.
- :func:`draw_seed` (:func:`replica_draws` for a :class:`Replica`): the seed of a replica's Monte-Carlo draws,
  keyed to (notebook seed, setting, replica index, draw), so replicas and notebook seeds draw apart.
- :func:`data_seed`: the seed of a replica's generated stand-in data (the split, the canvases, their placements and
  colours), keyed to (notebook seed, replica index), so that each replica trains and is scored on its own draw of
  the data set and the replica spread holds the data's variance; replica r of two settings of one chapter (the
  CNN and the ViT of one replica) share their data.
- The frames' ``replica`` column (:data:`REPLICA`): :func:`has_replicas`, :func:`unit_keys`, :func:`groups`,
  :func:`with_replica`, :func:`count` and :func:`column` read it, so no claim function tests for the column by hand.
  A frame without the column holds one model (replica 0).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd

REPLICA = "replica"

__all__ = ["REPLICA", "Replica", "replicas", "replica_seed", "draw_seed", "replica_draws", "data_seed", "training_seed",
           "has_replicas", "unit_keys", "groups", "with_replica", "count", "column"]


def replica_seed(seed: int, name: str, replica: int) -> int:
    """The training seed of replica ``replica`` of setting ``name`` under the study's ``seed``: a SHA-256 key of
    the three (never a sum, so two settings never share a seed), below 2**31."""
    if not isinstance(replica, (int, np.integer)) or replica < 0:
        raise ValueError(f"replica must be an index ≥ 0, got {replica!r}")
    digest = hashlib.sha256(f"{int(seed)}/{name}/{int(replica)}".encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


def draw_seed(seed: int, setting: str, replica: int, *keys: int | str) -> int:
    """The seed of the Monte-Carlo draws (masks, degradations, noise, shuffles) of replica ``replica`` of setting
    ``setting`` under the notebook's ``seed``, one stream per ``keys`` (a draw's name or index): a SHA-256 key of
    ``("draws", seed, setting, replica, *keys)`` (never a sum; apart from :func:`replica_seed`'s keys), below 2**63,
    a generator int. Each replica, setting and notebook seed gets its own draws; the same key, the same draws."""
    if not isinstance(replica, (int, np.integer)) or isinstance(replica, bool) or replica < 0:
        raise ValueError(f"replica must be an index ≥ 0, got {replica!r}")
    if not all(isinstance(k, (str, int, np.integer)) and not isinstance(k, bool) for k in keys):
        raise TypeError(f"keys must be ints or names, got {keys!r}")
    text = "/".join(["draws", str(int(seed)), str(setting), str(int(replica)), *(str(k) for k in keys)])
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little") & 0x7FFFFFFFFFFFFFFF


def replica_draws(seed: int, replica: Replica | None, *keys: int | str) -> int:
    """:func:`draw_seed` of ``replica`` (its setting and index) under the notebook's ``seed``; a single model
    (``replica=None``, the convention of the module docstring) draws as replica 0 of the unnamed setting ``""``."""
    if replica is None:
        return draw_seed(seed, "", 0, *keys)
    if not isinstance(replica, Replica):
        raise TypeError(f"replica must be a Replica of faithlab_study.verdicts.replicas (or None), got {replica!r:.80}")
    return draw_seed(seed, replica.setting, replica.index, *keys)


def data_seed(seed: int, replica: Replica | int | None) -> int:
    """The seed of the generated data of replica ``replica`` (a :class:`Replica` or its index) under the notebook's
    ``seed``: a SHA-256 key of ``("data", seed, index)``, below 2**31 (never a sum). Keyed to the index and not to the
    setting, so that the models of one replica (the CNN and the ViT of a chapter) see the same data set; a single
    model (``replica=None``) keeps the notebook's ``seed`` itself, the convention of the module docstring."""
    if replica is None:
        return int(seed)
    index = replica.index if isinstance(replica, Replica) else replica
    if not isinstance(index, (int, np.integer)) or isinstance(index, bool) or index < 0:
        raise ValueError(f"replica must be a Replica or an index ≥ 0, got {replica!r:.80}")
    digest = hashlib.sha256(f"data/{int(seed)}/{int(index)}".encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


@dataclass(frozen=True)
class Replica:
    """One trained replica of a setting: its ``index`` (the frames' ``replica`` column) and its training ``seed``."""

    setting: str
    index: int
    seed: int


def replicas(seed: int, setting: str, n: int) -> Iterator[Replica]:
    """The ``n`` replicas of ``setting`` under the study's ``seed``, in index order (the replica loop: train or load
    each replica with ``replica.seed``, record it under ``replica.index``)."""
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
        raise ValueError(f"n (replicas) must be a positive integer, got {n!r}")
    if not isinstance(setting, str) or not setting:
        raise ValueError(f"setting must be a non-empty name, got {setting!r}")
    for r in range(int(n)):
        yield Replica(setting, r, replica_seed(seed, setting, r))


def training_seed(seed: int, replica: Replica | None) -> int:
    """The seed a set-up function trains with: ``replica.seed``, or the data's ``seed`` for a single model
    (``replica=None``; the convention of the module docstring)."""
    if replica is None:
        return int(seed)
    if not isinstance(replica, Replica):
        raise TypeError(f"replica must be a Replica of faithlab_study.verdicts.replicas (or None), got {replica!r:.80}")
    return int(replica.seed)


def _names(frame) -> set:
    if isinstance(frame, pd.DataFrame):
        return set(frame.columns) | set(frame.index.names)
    if isinstance(frame, pd.Index):
        return set(frame.names)
    if isinstance(frame, pd.Series):
        return set(frame.index.names)
    raise TypeError(f"frame must be a pandas DataFrame, Series or Index, got {type(frame).__name__}")


def has_replicas(*frames) -> bool:
    """Whether every one of ``frames`` (DataFrames, or indexes) carries the ``replica`` column or index level."""
    return bool(frames) and all(REPLICA in _names(f) for f in frames)


def unit_keys(frame, *keys: str) -> list[str]:
    """``["replica", *keys]`` when ``frame`` carries replicas, else ``list(keys)``: the keys of one unit."""
    return [REPLICA, *keys] if has_replicas(frame) else list(keys)


def column(frame: pd.DataFrame) -> pd.Series:
    """The ``replica`` column of ``frame``, or zeros (one model) when it has none."""
    return frame[REPLICA] if has_replicas(frame) else pd.Series(0, index=frame.index, name=REPLICA)


def groups(frame) -> np.ndarray | None:
    """Each row's replica as a string (the interval functions' ``groups``), or None when ``frame`` (a DataFrame, or
    an index whose levels are named) holds one model."""
    if not has_replicas(frame):
        return None
    if isinstance(frame, pd.DataFrame) and REPLICA in frame.columns:
        return frame[REPLICA].astype(str).to_numpy()
    index = frame if isinstance(frame, pd.Index) else frame.index
    return index.get_level_values(REPLICA).astype(str).to_numpy()


def with_replica(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with a ``replica`` column (0, one model, where it had none)."""
    return frame if has_replicas(frame) else frame.assign(**{REPLICA: 0})


def count(frame: pd.DataFrame) -> int:
    """The number of replicas in ``frame`` (1 without the column)."""
    return int(frame[REPLICA].nunique()) if has_replicas(frame) and REPLICA in frame.columns else 1
