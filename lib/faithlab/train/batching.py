"""Batches of a dataset in a given index order, on a device: in-memory datasets (TensorData, TensorDataset) are
indexed directly, others go through a DataLoader with a private generator."""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch.utils.data import DataLoader, Dataset, TensorDataset

__all__ = ["data_tensors", "check_data", "batches"]


def data_tensors(data: Dataset) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(x, y) of in-memory datasets (TensorData, TensorDataset) for the fast path, else None."""
    if isinstance(data, TensorDataset) and len(data.tensors) >= 2:
        return data.tensors[0], data.tensors[1]
    x, y = getattr(data, "x", None), getattr(data, "y", None)
    return (x, y) if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) else None


def check_data(data, name: str) -> int:
    if not isinstance(data, Dataset) or not hasattr(data, "__len__"):
        raise TypeError(f"{name} must be a torch Dataset with a length yielding (x, y), got {type(data).__name__}")
    if len(data) == 0:
        raise ValueError(f"{name} is empty")
    return len(data)


def batches(data: Dataset, order: torch.Tensor, batch_size: int, device: torch.device, drop_last: bool = False
             ) -> Iterator[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """Yield (idx, x, y) batches of ``data`` in the given index order, x and y on device."""
    chunks = list(order.split(batch_size))
    if drop_last and len(chunks) > 1 and len(chunks[-1]) < batch_size:
        chunks.pop()
    tensors = data_tensors(data)
    if tensors is not None:
        x, y = tensors
        for idx in chunks:
            yield idx, x[idx].to(device), y[idx].to(device)
        return
    # a private generator: otherwise the loader draws its worker base seed from the global RNG (dropout's stream)
    loader = DataLoader(data, batch_sampler=[idx.tolist() for idx in chunks], generator=torch.Generator())
    for idx, (xb, yb) in zip(chunks, loader):
        yield idx, xb.to(device), yb.to(device)
