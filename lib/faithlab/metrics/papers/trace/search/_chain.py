"""The state a local search over trajectories (annealing, tabu search) keeps per image: how it starts (TRACE-Greedy,
a :class:`~faithlab.metrics.papers.trace.search.base.Search` or a trajectory), the current and best trajectories as it
moves, and the result it returns."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from faithlab.metrics.papers.trace.search.base import Search
from faithlab.metrics.papers.trace.search.greedy_search import run_greedy
from faithlab.metrics.papers.trace.trajectories import check_trajectory, order_curves, Setup
from faithlab.perturb import Output


def start(model: Callable, x: torch.Tensor, s: Setup, init: Search | torch.Tensor | None, *, objective: str,
          edge: int, output: Output, batch_size: int, done: Callable[[int], None]
           ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
    """The starting trajectory and its two curves → (τ, LeRF, MoRF, model inputs spent): TRACE-Greedy for None
    (-Mo for ``"mo"``, -Le otherwise), a :class:`Search` as given, or a trajectory whose curves are evaluated;
    ``done(n)`` is told the model inputs as they are spent."""
    b, t, dev = x.shape[0], s.t, x.device
    passes = 0
    if init is None:
        init = run_greedy(model, x, s, "mo" if objective == "mo" else "le", output, batch_size, done)
        passes = int(init.passes[-1])
    if isinstance(init, Search):
        tau, lerf, morf = init.trajectory.to(dev), init.lerf.to(dev), init.morf.to(dev)
        check_trajectory(tau, "init", b, t)
        if lerf.shape != (b, t + 1) or morf.shape != (b, t + 1):
            raise ValueError(f"init's curves must be ({b}, {t + 1}) for these images and edge={edge}, got lerf "
                             f"{tuple(lerf.shape)} and morf {tuple(morf.shape)}")
    else:
        tau = check_trajectory(init, "init", b, t, dev)
        both = order_curves(model, x, s, output, torch.cat([tau, tau.flip(1)]), torch.arange(b, device=dev).repeat(2),
                       batch_size)
        lerf, morf = both[:b], both[b:]
        passes += 2 * b * (t + 1)
        done(2 * b * (t + 1))
    return tau, lerf, morf, passes


@dataclass
class Chain:
    """The annealing state of every image: the current trajectory, its curves and energy, the best seen so far
    (``best``, with ``best_energy``) and the number of accepted moves."""

    tau: torch.Tensor
    lerf: torch.Tensor
    morf: torch.Tensor
    energy: torch.Tensor
    best: Search
    best_energy: torch.Tensor
    accepted: torch.Tensor

    @classmethod
    def starting_at(cls, tau: torch.Tensor, lerf: torch.Tensor, morf: torch.Tensor, energy: torch.Tensor
                    ) -> Chain:
        return cls(tau, lerf, morf, energy, Search(tau.clone(), lerf.clone(), morf.clone(), torch.empty(0)),
                   energy.clone(), torch.zeros(tau.shape[0], dtype=torch.int64, device=tau.device))

    def move(self, new_tau: torch.Tensor, new_lerf: torch.Tensor, new_morf: torch.Tensor, new_energy: torch.Tensor,
             take: torch.Tensor) -> None:
        """Move the images where ``take`` holds to their proposal; keep the best state seen."""
        self.tau = torch.where(take[:, None], new_tau, self.tau)
        self.lerf = torch.where(take[:, None], new_lerf, self.lerf)
        self.morf = torch.where(take[:, None], new_morf, self.morf)
        self.energy = torch.where(take, new_energy, self.energy)
        self.accepted += take.long()
        better = self.energy < self.best_energy
        best = self.best
        self.best = Search(torch.where(better[:, None], self.tau, best.trajectory),
                           torch.where(better[:, None], self.lerf, best.lerf),
                           torch.where(better[:, None], self.morf, best.morf), best.passes)
        self.best_energy = torch.where(better, self.energy, self.best_energy)


def chain_result(model: Callable, x: torch.Tensor, s: Setup, output: Output, chain: Chain, need: tuple[bool, bool],
            passes: list[int], history: list[torch.Tensor], batch_size: int) -> Search:
    """The best trajectory with both its curves: the curve the objective ignores was not tracked and is evaluated
    once here."""
    need_le, need_mo = need
    best = chain.best
    lerf, morf = best.lerf, best.morf
    if not (need_le and need_mo):
        other = order_curves(model, x, s, output, best.trajectory if need_mo else best.trajectory.flip(1), None,
                        batch_size)
        lerf, morf = (other, morf) if need_mo else (lerf, other)
        passes[-1] += other.numel()
    return Search(best.trajectory, lerf, morf, torch.tensor(passes), torch.stack(history), chain.accepted)
