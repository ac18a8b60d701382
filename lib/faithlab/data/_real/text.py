"""Loader of SST-2 (GLUE's sentiment task) as token ids with a vocabulary built from its training file
(:func:`sst2`); returned as :class:`~faithlab.data.TensorData`."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import torch

from faithlab import _validate

from .._core import TensorData, check_split
from ._files import data_root, missing_files, no_download


def _read_glue_tsv(path: Path) -> tuple[list[str], list[int]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    header = lines[0].split("\t") if lines else []
    if "sentence" not in header or "label" not in header:
        raise ValueError(f"{path}: the header must name the columns 'sentence' and 'label', got {header}")
    text, label = header.index("sentence"), header.index("label")
    rows = [line.split("\t") for line in lines[1:] if line.strip()]
    return [row[text] for row in rows], [int(row[label]) for row in rows]


def sst2(*, split: str = "train", data_dir: str | Path | None = None, download: bool = False, max_len: int = 64,
         min_freq: int = 1, max_vocab: int | None = None) -> TensorData:
    """SST-2 (GLUE): ``train`` = train.tsv (67,349), ``test`` = dev.tsv (872; GLUE's test.tsv has no labels).

    Tokens: lower-cased whitespace split. Vocabulary from train.tsv only: tokens with count ≥ min_freq, most
    frequent first (ties alphabetical), at most max_vocab, ids from 2 (0 = pad, 1 = unk). Sequences truncated
    to max_len and right-padded with 0.
    Layout: data_dir/ or data_dir/SST-2/ holding train.tsv and dev.tsv with header "sentence<TAB>label".

    Returns TensorData: x (N, max_len) int64, y (N,) (0 negative, 1 positive); extras ``lengths`` (N,);
    info ``vocab`` (list: token of id 2 + i).
    """
    check_split(split)
    no_download("sst2", download)
    _validate.positive_int(max_len, "max_len")
    _validate.positive_int(min_freq, "min_freq")
    if max_vocab is not None:
        _validate.positive_int(max_vocab, "max_vocab")
    root = data_root(data_dir, "sst2")
    base = root / "SST-2" if (root / "SST-2").is_dir() else root
    files = {"train": base / "train.tsv", "test": base / "dev.tsv"}
    if not (files["train"].is_file() and files[split].is_file()):
        raise missing_files("sst2", root, "  data_dir[/SST-2]/train.tsv and dev.tsv, header 'sentence\\tlabel'")
    counts = Counter(t for sentence in _read_glue_tsv(files["train"])[0] for t in sentence.lower().split())
    vocab = sorted((t for t, c in counts.items() if c >= min_freq), key=lambda t: (-counts[t], t))[:max_vocab]
    ids = {t: i + 2 for i, t in enumerate(vocab)}
    sentences, labels = _read_glue_tsv(files[split])
    x = torch.zeros(len(sentences), max_len, dtype=torch.int64)
    lengths = torch.zeros(len(sentences), dtype=torch.int64)
    for i, sentence in enumerate(sentences):
        encoded = [ids.get(t, 1) for t in sentence.lower().split()[:max_len]]
        x[i, : len(encoded)] = torch.tensor(encoded, dtype=torch.int64)
        lengths[i] = len(encoded)
    info = {"name": "sst2", "n_classes": 2, "class_names": ["negative", "positive"], "mean": None, "std": None,
            "split": split, "vocab": vocab, "vocab_size": len(vocab) + 2, "pad_id": 0, "unk_id": 1,
            "max_len": max_len}
    return TensorData(x, torch.tensor(labels, dtype=torch.int64), None, info, {"lengths": lengths})
