"""What the peers' side scripts (``_quantus_side.py``, ``_torchcam_side.py``) share, in plain torch: they run in the
peer's own environment, where faithlab is not installed, and import this from their folder (it is on their
``sys.path``); ``torchcam_peer.py`` uses the same recorder and replay on the project side. Never imported by the
project."""

from __future__ import annotations

import torch
from torch import nn


class SmallCNN(nn.Module):
    """faithlab's ``small_cnn``, rebuilt with the same parameter names (its state dict is loaded strictly, so a drift
    from the original fails)."""

    def __init__(self, in_channels: int, n_classes: int, width: int) -> None:
        super().__init__()
        w = width
        self.features = nn.Sequential(
            nn.Sequential(nn.Conv2d(in_channels, w, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)),
            nn.Sequential(nn.Conv2d(w, 2 * w, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)),
            nn.Sequential(nn.Conv2d(2 * w, 2 * w, 3, padding=1), nn.ReLU()),
        )
        self.pool = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.fc = nn.Linear(2 * w, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.pool(self.features(x)))


class Recorder(nn.Module):
    """Passes inputs to the model and keeps a copy of each call's input (to count them and replay them bare)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model, self.seen = model, []

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        self.seen.append(inputs.detach().clone())
        return self.model(inputs)


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def replay(model: nn.Module, calls: list[torch.Tensor]) -> None:
    """Bare forward passes in the very calls a metric made, each input copied afresh (as the project side does)."""
    with torch.no_grad():
        for inputs in calls:
            model(inputs.clone())


def bare(model: nn.Module, inputs: torch.Tensor, batch_size: int) -> None:
    """Bare forward passes, ``batch_size`` per call, each chunk copied afresh (as the project side does)."""
    with torch.no_grad():
        for start in range(0, inputs.shape[0], batch_size):
            model(inputs[start:start + batch_size].clone())


# ---- the peers' throw-away environments (the project side only: the side scripts never call these)
def env_ready(env, ready: str, pins: dict) -> bool:
    """Whether ``env`` was made by :func:`ensure_env` with these pins (a torch upgrade of the project makes it
    stale): its python exists and its ``ready`` file records ``pins``."""
    import json
    from pathlib import Path

    env = Path(env)
    marker = env / ready
    return (env / "bin" / "python").exists() and marker.exists() and json.loads(marker.read_text() or "{}") == pins


def ensure_env(env, *, ready: str, pins: dict, imports: str, label: str, hint: str = ""):
    """The peer environment's python, (re)making ``env`` with uv first if it is missing or stale (printed): a venv on
    this python with ``pins`` installed, then a probe that runs ``imports`` (Python statements) and reads the
    installed versions, which must equal ``pins``; ``ready`` records them. label names the peer in messages; hint
    is added when the probe fails."""
    import json
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    env = Path(env)
    python = env / "bin" / "python"
    if env_ready(env, ready, pins):
        print(f"peer environment: {env} (cached; {pins})")
        return python
    uv = shutil.which("uv") or str(Path.home() / ".local" / "bin" / "uv")
    if not Path(uv).exists():
        raise SystemExit(f"uv not found (needed to make the {label} environment): install uv or pass --skip-peer")
    commands = [[uv, "venv", "--clear", "--python", sys.executable, str(env)],
                [uv, "pip", "install", "--python", str(python), *(f"{k}=={v}" for k, v in pins.items())]]
    for cmd in commands:
        print("peer environment:", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)
    probe = subprocess.run([str(python), "-c", f"import json, importlib.metadata as m; {imports}; "
                            f"print(json.dumps({{k: m.version(k) for k in {list(pins)!r}}}))"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        raise SystemExit(f"the {label} environment {env} does not import what the benchmark needs{hint}:\n"
                         f"{probe.stderr[-2000:]}")
    got = json.loads(probe.stdout)
    if got != pins:
        raise SystemExit(f"the {label} environment {env} holds {got}, not {pins}")
    (env / ready).write_text(json.dumps(got))
    print(f"peer environment ready: {got}")
    return python
