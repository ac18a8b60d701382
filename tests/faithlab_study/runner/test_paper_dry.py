"""The ``paper-dry`` profile: the ``paper`` profile's code paths on CPU, on tiny fake copies of the papers' datasets in
their real on-disk formats and random weights at the architectures' real sizes (``write_paper_dry`` of
tests/support/paper_dry.py).

Here: the fake folder (every real loader reads it, the weights load through the project's own path, the writer is
deterministic) and a representative subset of the notebooks, one per paper; ``make paper-dry`` runs all of them.
The fake folder is written once into data/cache/paper-dry (gitignored; kept between runs, as ``make paper-dry``
keeps it); the notebooks write into a temporary folder, with their own cache of trained models.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import faithlab as fl
import faithlab_study as fs
from faithlab_study import runner
import paper_dry as fake

ROOT = Path(__file__).resolve().parents[3]
DRY = ROOT / "data" / "cache" / "paper-dry"
SUBSET = ["saco/random_vs_methods", "ffidelity/images_ranking", "trace/random_test", "fewclass/flips",
          "reco_mege/comparison"]
"""One notebook per paper (about 120 s of notebooks on one core, run 2 at a time): SaCo's main study with a timm ViT
(ViT-Ti/16, 224 px) from the Hugging Face cache on ImageNet-val, F-Fidelity's ResNet-9 ranking study, TRACE's six
torchvision ImageNet CNNs at their real sizes, Few-class Fidelity's CT task with timm's ResNet-50 and Xception,
ReCo/MeGe on CIFAR-10 (binary version). SaCo's case study reads ViT-B/16 the same way in 58 s against 38 s here: it
is left to ``make paper-dry``, which runs all 23."""


@pytest.fixture(scope="module")
def dry() -> dict[str, str]:
    return fake.write_paper_dry(DRY)


def test_the_profile_names_every_notebook_and_reads_only_the_fake_folder():
    import yaml

    own = yaml.safe_load((ROOT / "notebooks" / "params" / "paper-dry.yaml").read_text())
    assert own["extends"] == "paper" and own["defaults"] == {"device": "cpu"}
    assert set(own["notebooks"]) == {nb.name for nb in runner.discover(ROOT)}  # no notebook left at paper sizes

    def paths(value):
        if isinstance(value, dict):
            for key, item in value.items():
                if key in ("data_dir", "weights_path") and item is not None:
                    yield item
                else:
                    yield from paths(item)
        elif isinstance(value, list):
            for item in value:
                yield from paths(item)

    merged = runner.load_profile("paper-dry", ROOT)["notebooks"]
    found = list(paths(merged))
    assert len(found) > 20 and not [p for p in found if not p.startswith("data/cache/paper-dry")], found


def test_every_real_loader_reads_the_fake_folder(dry):
    folders = {"imagenet_val": DRY / "imagenet", "imagenet_vehicles": DRY / "fewclass" / "imagenet_vehicles",
               "ct_contrast": DRY / "fewclass" / "ct_contrast", "tiny_imagenet": DRY / "tiny-imagenet-200",
               "pam": DRY / "PAMAP2data", "boiler": DRY / "boiler"}
    real = fl.data.available()[fl.data.available().index("cifar10"):]
    for name in real:
        split = "test" if name in ("imagenet_val", "imagenet_vehicles", "ct_contrast") else "train"
        ds = fl.data.load(name, split=split, data_dir=folders.get(name, DRY))
        x, y = (ds.x, ds.y) if isinstance(ds, fl.data.TensorData) else fl.data.to_tensors(ds)
        assert len(x) >= 6 and torch.isfinite(x.float()).all(), name
        assert len(set(y.tolist())) >= 2, f"{name}: a single class"
    assert not (DRY / "cifar-10-batches-py").exists()  # the pickled python version is never written


def test_weights_load_through_the_project_path_and_favour_class_zero(dry, monkeypatch):
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", dry["HF_HUB_CACHE"])
    arch, _, tag = fake.TIMM_MODELS[-1].partition(".")
    vit = fl.models.vit_from_timm(fl.models.pretrained(arch, weights=tag, source="timm"))  # sha256-checked blob
    raw = fl.data.load("imagenet_val", split="test", data_dir=DRY / "imagenet", mean=(0.5,) * 3, std=(0.5,) * 3)
    with torch.no_grad():
        assert (vit(fl.data.to_tensors(raw)[0]).argmax(1) == 0).all()
    ct = fl.data.load("ct_contrast", split="test", data_dir=DRY / "fewclass" / "ct_contrast")
    spec = fake.FEWCLASS_MODELS["resnet50_ct"]
    model = fl.models.pretrained(spec["arch"], source=spec["source"], **spec["config"],
                                 weights_path=DRY / "fewclass" / "models" / "resnet50_ct.pt")
    with torch.no_grad():
        assert (model(ct.x) > 0).all()  # one logit: every slice predicted "with contrast"
    state = torch.load(DRY / "torchvision" / "densenet161.pt", weights_only=True)
    assert sum(v.numel() for k, v in state.items() if "running" not in k and "num_batches" not in k) > 28_000_000


def test_the_writer_is_deterministic_and_stays_in_its_folder(tmp_path):
    a, b = (np.random.default_rng(3) for _ in range(2))
    fake._small_image_sets(tmp_path / "a", a, 2)
    fake._small_image_sets(tmp_path / "b", b, 2)
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert len(files) > 20 and sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*")
                                       if p.is_file()) == files
    assert all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files)
    assert not (tmp_path / "c").exists() and {p.name for p in tmp_path.iterdir()} == {"a", "b"}

    def build() -> nn.Module:
        return nn.Sequential(nn.Flatten(), nn.Linear(12, 3))

    before = torch.random.get_rng_state()
    first, second = fake.random_model(build, seed=5), fake.random_model(build, seed=5)
    assert torch.equal(torch.random.get_rng_state(), before)  # the caller's global RNG is untouched
    assert all(torch.equal(p, q) for p, q in zip(first.state_dict().values(), second.state_dict().values()))
    x = torch.randn(9, 3, 2, 2, generator=torch.Generator().manual_seed(0))
    assert (fake.random_model(build, seed=5, inputs=x)(x).argmax(1) == 0).all()
    with pytest.raises(TypeError, match="seed"):
        fake.write_paper_dry(tmp_path / "d", seed=1.5)
    assert not (tmp_path / "d").exists()


class _FirstCallJitter(nn.Module):
    """A linear classifier whose first forward pass reads logit 0 ``jitter`` higher than every later pass: what
    another float summation order (another torch thread count) does to the margin measured before the bias step."""

    def __init__(self, jitter: float):
        super().__init__()
        self.head, self.jitter, self.calls = nn.Linear(12, 3), jitter, 0
        with torch.no_grad():
            self.head.bias[0] = 2.2  # a bias near 2.2, as the ViT-Ti's was: its ULP (2.4e-7) exceeds twice the jitter

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = self.head(x.flatten(1))
        self.calls += len(x) > 1  # margin passes (random_model reads the head's width from one input)
        if self.calls == 1:
            logits = logits + torch.tensor([self.jitter, 0.0, 0.0])
        return logits


def test_the_bias_step_has_slack_for_another_summation_order():
    """A step of exactly the measured margin left the new margin a few ULP above 0 when the first pass summed in
    another order, and ULP-sized steps on a bias near 2.2 are lost in rounding (the fresh-clone failure at one torch
    thread). The step has one to two quanta of slack: done after one step, class 0 ahead by at least 1."""
    x = torch.randn(9, 3, 2, 2, generator=torch.Generator().manual_seed(0))
    model = fake.random_model(lambda: _FirstCallJitter(1e-7), seed=3, inputs=x)
    assert model.calls == 2  # the margin before the step and after it: one step
    with torch.no_grad():
        logits = model.head(x.flatten(1))
    assert (logits[:, 0] - logits[:, 1:].max(dim=1).values >= 1.0).all()
    steps = (model.head.bias[0].item() - 2.2) / fake.BIAS_QUANTUM
    assert abs(steps - round(steps)) < 1e-3  # whole quanta (float32 bias: 2.2 is not exact, hence the tolerance)


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_the_fake_models_are_written_at_any_thread_count(dry, threads):
    """The models that are biased towards class 0 on the fake images (Few-class Fidelity's three, the ViT-Ti that
    failed at one thread, seed 201) come out with class 0 ahead by at least 1 and the same classifier bias as the
    folder written by the fixture, at 1, 2 and 4 torch threads (ViT-B/16 is left out: at 4 threads on 2 cores it
    takes minutes, and it is the same timm class as ViT-Ti)."""
    import timm
    import torchvision

    vehicles = fl.data.to_tensors(fl.data.load("imagenet_vehicles", split="test",
                                               data_dir=DRY / "fewclass" / "imagenet_vehicles"))[0]
    ct = fl.data.load("ct_contrast", split="test", data_dir=DRY / "fewclass" / "ct_contrast").x
    vit = fake.TIMM_MODELS[-1]
    cases = {key: (lambda spec=spec: (torchvision.models.get_model if spec["source"] == "torchvision"
                                      else timm.create_model)(spec["arch"], **spec["config"]),
                   100 + i, ct if key.endswith("_ct") else vehicles)
             for i, (key, spec) in enumerate(fake.FEWCLASS_MODELS.items())}
    cases[vit] = (lambda: timm.create_model(vit, pretrained=False), 200 + fake.TIMM_MODELS.index(vit),
                  fake._timm_inputs(DRY, vit))
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        for key, (build, seed, inputs) in cases.items():
            model = fake.random_model(build, seed=seed, inputs=inputs)
            with torch.no_grad():
                logits = model(inputs)
            margin = logits[:, 0] if logits.shape[1] == 1 else logits[:, 0] - logits[:, 1:].max(dim=1).values
            assert (margin >= 1.0).all(), (key, threads, margin.min().item())
            head = fake._head(model, logits.shape[1])
            written = (torch.load(DRY / "fewclass" / "models" / f"{key}.pt", weights_only=True)
                       if key in fake.FEWCLASS_MODELS else None)
            if written is not None:
                name = next(n for n, m in model.named_modules() if m is head)
                assert torch.equal(written[f"{name}.bias"], head.bias.detach()), (key, threads)
    finally:
        torch.set_num_threads(before)


@pytest.mark.slow
def test_paper_dry_subset_runs(dry, tmp_path, monkeypatch):
    """One notebook per paper with the paper-dry profile; a failure names the notebook and shows its traceback."""
    monkeypatch.setenv("HF_HUB_CACHE", dry["HF_HUB_CACHE"])
    monkeypatch.setenv("FAITHLAB_CACHE", str(tmp_path / "cache"))
    results = runner.run(SUBSET, profile="paper-dry", root=ROOT, generated=tmp_path / "generated", force=True,
                        jobs=2, timeout=900)
    assert sorted(r.name for r in results) == sorted(SUBSET)
    failed = [r for r in results if r.status != "ran"]
    if failed:
        pytest.fail("paper-dry notebooks failed:\n" + "\n".join(f"{r.name}: {r.message}\n{_traceback(r.name)}"
                                                                for r in failed), pytrace=False)


def _traceback(name: str) -> str:
    """The tail of the failed notebook's traceback (the runner keeps the executed copy in _build/failed/)."""
    path = ROOT / "_build" / "failed" / f"{name}.ipynb"
    if not path.is_file():
        return ""
    errors = [o for cell in json.loads(path.read_text())["cells"] for o in cell.get("outputs", [])
              if o.get("output_type") == "error"]
    text = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(errors[-1]["traceback"])) if errors else ""
    return "\n".join(text.splitlines()[-25:])


# ------------------------------------------------------------------------------- paper-path fixes the dry run found
def _vehicles(root: Path) -> None:
    rng = np.random.default_rng(0)
    for split in ("train", "test"):
        fake.write_image_folder(root / "imagenet_vehicles" / split, {
            cls: {f"{cls}_{k}.jpeg": fake.texture(rng, (96, 80)) for k in range(2)} for cls in fake.VEHICLE_CLASSES})


def _squeezenet(path: Path, x: torch.Tensor | None = None) -> nn.Module:
    import torchvision

    model = fake.random_model(lambda: torchvision.models.squeezenet1_1(num_classes=3), seed=0, inputs=x)
    torch.save(model.state_dict(), path)
    return model


def test_fewclass_paper_models_get_a_gradcam_layer(tmp_path):
    """torchvision/timm models have no ``cam_layer``: the paper settings' Grad-CAM layer comes from CAM_LAYERS or
    the setting's ``cam_layer`` (before, GradCAM raised "model has no cam_layer attribute" on the paper path)."""
    P = fs.papers.fewclass
    _vehicles(tmp_path)
    x = fl.data.to_tensors(fl.data.load("imagenet_vehicles", split="test",
                                        data_dir=tmp_path / "imagenet_vehicles"))[0]
    _squeezenet(tmp_path / "sq.pt", x)
    setting = {"name": "SqueezeNet", "arch": "squeezenet1_1", "weights_path": str(tmp_path / "sq.pt"),
               "config": {"num_classes": 3}}
    s = P.setup("vehicles", [setting], n_images=2, data_dir=tmp_path, paper=True, n_background=2)
    assert s.layers == {"SqueezeNet": None}  # no default for SqueezeNet: fine until Grad-CAM is asked for
    with pytest.raises(ValueError, match=r"GradCAM.*\['SqueezeNet'\].*cam_layer"):
        P.evaluate_task(s, methods=["GradCAM"], alterations=("none",))
    s = P.setup("vehicles", [{**setting, "cam_layer": "features.12"}], n_images=2, data_dir=tmp_path, paper=True,
                n_background=2)
    assert s.layers == {"SqueezeNet": "features.12"} and len(s.x) == 2
    maps = P.method_maps(s.models["SqueezeNet"], s.x, s.y, methods={"GradCAM": P.METHODS["GradCAM"]},
                         alterations=("none",), layer=s.layers["SqueezeNet"])
    assert maps["GradCAM", "none"].shape[-2:] == s.x.shape[-2:]
    assert P.CAM_LAYERS["resnet50"] == "layer4" and "legacy_xception" in P.CAM_LAYERS


def test_trace_torchvision_entries_may_name_a_state_dict(tmp_path):
    """TRACE's torchvision_models: a name (published weights from the torch-hub cache) or {name, weights_path,
    config} (any state dict, read with weights_only)."""
    P = fs.papers.trace
    rng = np.random.default_rng(1)
    fake.write_image_folder(tmp_path / "val", {w: {f"ILSVRC2012_val_0000000{i}.JPEG": fake.texture(rng, (64, 64))}
                                               for i, w in enumerate(fake.IMAGENET_WNIDS)})
    source = _squeezenet(tmp_path / "sq.pt")
    entry = {"name": "squeezenet1_1", "weights_path": str(tmp_path / "sq.pt"), "config": {"num_classes": 3}}
    s = P.setup([], n_images=2, dataset="imagenet_val", data_dir=tmp_path, torchvision_models=[entry])
    loaded = s.models["squeezenet1_1"].state_dict()
    assert all(torch.equal(v, loaded[k]) for k, v in source.state_dict().items())
    assert s.info["weights"].tolist() == [str(tmp_path / "sq.pt")] and s.x.shape == (2, 3, 224, 224)
    with pytest.raises(ValueError, match="torchvision_models entries"):
        P.setup([], n_images=2, dataset="imagenet_val", data_dir=tmp_path,
                torchvision_models=[{"name": "squeezenet1_1", "weights": "x.pt"}])
