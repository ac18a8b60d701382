"""Training R replicas of a small CNN: one after the other, or together as one vmapped model (issue 49, item 7).

The study trains R ≥ 3 independent replicas per setting. On a GPU, or when one replica's batches are too small to
keep the cores busy, stacking the replicas' parameters (``torch.func.stack_module_state``) and running one vmapped
``functional_call`` per step can beat R sequential loops; on 2 CPU cores it may not. This benchmark times both on
the same work — R replicas × E epochs of Adam on scikit-learn digits upsampled to ``--size`` px, each replica with
its own initialisation and its own data order, batch 64 — and checks that the two give the same weights (the
stacked update is per-replica Adam: elementwise, so it equals R separate optimisers). Run:

    python benchmarks/replica_training.py --replicas 3 --epochs 2 --threads 2 [--device cuda]
"""

from __future__ import annotations

import argparse
import copy

import torch
from torch.func import functional_call, stack_module_state

import faithlab as fl
from _timing import timed


def _data(size: int, device):
    data = fl.data.load("digits", split="train", size=size, seed=0)
    x, y = data.x, data.y
    return x.to(device), y.to(device)


def _orders(n: int, replicas: int, epochs: int, batch: int, seed: int):
    """Each replica's own minibatch order: (steps, replicas, batch) indices (the last short batch dropped)."""
    g = torch.Generator().manual_seed(seed)
    steps = []
    for _ in range(epochs):
        perms = torch.stack([torch.randperm(n, generator=g) for _ in range(replicas)])  # (R, n)
        for start in range(0, n - batch + 1, batch):
            steps.append(perms[:, start:start + batch])
    return torch.stack(steps)  # (steps, R, batch)


def sequential(models, x, y, orders, lr: float = 3e-3):
    for r, model in enumerate(models):
        opt = torch.optim.Adam(model.parameters(), lr=lr)
        for idx in orders[:, r]:
            opt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(model(x[idx]), y[idx])
            loss.backward()
            opt.step()
    return models


def stacked(models, x, y, orders, lr: float = 3e-3):
    params, buffers = stack_module_state(models)
    params = {k: v.detach().requires_grad_() for k, v in params.items()}
    base = copy.deepcopy(models[0]).to("meta")
    opt = torch.optim.Adam(params.values(), lr=lr)

    def loss_one(p, b, xb, yb):
        return torch.nn.functional.cross_entropy(functional_call(base, (p, b), (xb,)), yb)

    batched = torch.vmap(loss_one)
    for idx in orders:  # (R, batch)
        opt.zero_grad(set_to_none=True)
        batched(params, buffers, x[idx], y[idx]).sum().backward()  # replicas' losses are independent: sum is exact
        opt.step()
    return params


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--size", type=int, default=16)
    parser.add_argument("--width", type=int, default=16)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--n", type=int, default=None, help="training images (default: all of digits' train split)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    x, y = _data(args.size, device)
    x, y = (x[:args.n], y[:args.n]) if args.n else (x, y)
    orders = _orders(len(x), args.replicas, args.epochs, args.batch, seed=0).to(device)

    def fresh():
        return [_init(r, x.shape[1], args.width, device) for r in range(args.replicas)]

    # the same result: stacked training equals the sequential loops, replica by replica
    seq = sequential(fresh(), x, y, orders)
    stk = stacked(fresh(), x, y, orders)
    worst = max((stk[name][r] - dict(m.named_parameters())[name]).abs().max().item()
                for r, m in enumerate(seq) for name in stk)
    if not worst < 1e-4:
        raise SystemExit(f"stacked training differs from the sequential loops by {worst:.2e}: not the same result")
    times, _ = timed({"sequential": lambda: sequential(fresh(), x, y, orders),
                      "stacked (vmap)": lambda: stacked(fresh(), x, y, orders)},
                     device=device, repeats=args.repeats, warmup=0)
    print(f"{args.replicas} replicas × {args.epochs} epochs, small_cnn width {args.width}, {args.size} px, batch "
          f"{args.batch}, {args.threads} threads, {device}: sequential {times['sequential']:.2f} s, stacked "
          f"{times['stacked (vmap)']:.2f} s, ratio sequential/stacked {times['sequential'] / times['stacked (vmap)']:.2f}"
          f"; largest weight difference {worst:.2e}")


def _init(replica: int, in_channels: int, width: int, device):
    torch.manual_seed(1000 + replica)
    return fl.models.build("small_cnn", in_channels=in_channels, n_classes=10, width=width).to(device)


if __name__ == "__main__":
    main()
