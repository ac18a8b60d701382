"""``fl.models.pretrained`` loads weights from local files only (state dicts, the torchvision hub cache, the Hugging
Face cache for timm), and ``fl.models.vit_from_timm`` converts a timm ViT to faithlab's exactly (identical logits, the
ViT explainers on it) or refuses the configurations it cannot convert."""

from __future__ import annotations

import hashlib

import pytest
import torch
from torch import nn

import faithlab as fl


# ------------------------------------------------------------------------------------------- pretrained


def test_pretrained_builds_architectures_without_weights():
    model = fl.models.pretrained("resnet18", num_classes=7)
    assert not model.training and model(torch.randn(1, 3, 32, 32)).shape == (1, 7)
    vit = fl.models.pretrained("test_vit", source="timm", num_classes=3)
    assert not vit.training and vit(torch.randn(1, 3, 160, 160)).shape == (1, 3)


def test_pretrained_argument_errors(tmp_path):
    with pytest.raises(ValueError, match="source"):
        fl.models.pretrained("resnet18", source="hub")
    with pytest.raises(ValueError, match="name"):
        fl.models.pretrained("resnet_nope")
    with pytest.raises(ValueError, match="name"):
        fl.models.pretrained("resnet_nope", source="timm")
    with pytest.raises(ValueError, match="weights"):
        fl.models.pretrained("resnet18", weights="IMAGENET99")
    with pytest.raises(ValueError, match="weights_path"):
        fl.models.pretrained("resnet18", weights="DEFAULT", weights_path=tmp_path / "w.pt")
    with pytest.raises(FileNotFoundError, match="weights_path"):
        fl.models.pretrained("resnet18", weights_path=tmp_path / "missing.pt")


def _same_params(a: nn.Module, b: nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def test_pretrained_loads_local_state_dicts(tmp_path):
    torch.manual_seed(0)
    source = fl.models.pretrained("squeezenet1_1", num_classes=4)
    torch.save({"state_dict": source.state_dict()}, tmp_path / "ckpt.pt")
    loaded = fl.models.pretrained("squeezenet1_1", num_classes=4, weights_path=tmp_path / "ckpt.pt")
    assert _same_params(source, loaded)


def test_pretrained_torchvision_weights_come_from_the_local_hub_cache_only(tmp_path, monkeypatch):
    import torchvision

    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="not on disk"):
        fl.models.pretrained("squeezenet1_1", weights="DEFAULT")
    (tmp_path / "hub" / "checkpoints").mkdir(parents=True)
    source = fl.models.pretrained("squeezenet1_1")
    torch.save(source.state_dict(), tmp_path / "w.pth")
    # the file must match the sha256 prefix in its published name: publish this one under its own hash
    name = f"squeezenet1_1-{hashlib.sha256((tmp_path / 'w.pth').read_bytes()).hexdigest()[:8]}.pth"
    weights = torchvision.models.get_model_weights("squeezenet1_1")
    monkeypatch.setattr(weights, "url", property(lambda self: f"https://download.pytorch.org/models/{name}"))
    (tmp_path / "w.pth").rename(tmp_path / "hub" / "checkpoints" / name)
    assert _same_params(source, fl.models.pretrained("squeezenet1_1", weights="IMAGENET1K_V1"))


def test_pretrained_timm_weights_come_from_the_local_hf_cache_only(tmp_path, monkeypatch):
    import huggingface_hub.constants  # a submodule: loaded by its own import, not by the package
    from safetensors.torch import save_file

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="Hugging Face cache"):
        fl.models.pretrained("test_vit", weights="DEFAULT", source="timm")
    repo = tmp_path / "models--timm--test_vit.r160_in1k"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("0" * 40)
    (repo / "snapshots" / ("0" * 40)).mkdir(parents=True)
    torch.manual_seed(1)
    source = fl.models.pretrained("test_vit", source="timm")
    save_file(source.state_dict(), str(repo / "snapshots" / ("0" * 40) / "model.safetensors"))
    assert _same_params(source, fl.models.pretrained("test_vit", weights="DEFAULT", source="timm"))


# ------------------------------------------------------------------------------------------- timm ViT conversion


def _timm_vit(**kwargs):
    import timm

    torch.manual_seed(0)
    config = dict(pretrained=False, img_size=32, patch_size=8, num_classes=5, embed_dim=24, depth=2, num_heads=3)
    return timm.create_model("vit_tiny_patch16_224", **{**config, **kwargs}).eval()


@pytest.mark.parametrize("options", [{}, {"qkv_bias": False}])
def test_vit_from_timm_gives_identical_logits_and_supports_the_vit_explainers(options):
    source = _timm_vit(**options)
    with torch.no_grad():  # timm initialises biases, CLS token and LayerNorm shifts to 0: make them matter
        for name, p in source.named_parameters():
            if name.endswith("bias") or name == "cls_token":
                p.normal_(std=0.1)
    vit = fl.models.vit_from_timm(source)
    assert isinstance(vit, fl.models.ViT) and not vit.training
    assert (vit.grid, len(vit.blocks), vit.blocks[0].attn.heads, vit.norm.eps) == (4, 2, 3, 1e-6)
    x = torch.randn(4, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        assert torch.allclose(vit(x), source(x), atol=1e-5)
    maps = fl.explainers.explain(vit, x, 0, method="transformer_attribution")
    assert maps.shape == (4, 1, 32, 32) and bool(torch.isfinite(maps).all())


@pytest.mark.parametrize("options, need", [
    ({"reg_tokens": 2}, "register"), ({"global_pool": "avg", "fc_norm": True}, "global_pool"),
    ({"qk_norm": True}, "qk_norm"), ({"init_values": 1e-5}, "layer scale"), ({"pre_norm": True}, "pre_norm"),
])
def test_vit_from_timm_rejects_inexact_configurations(options, need):
    with pytest.raises(ValueError, match=f"timm_model.*{need}"):
        fl.models.vit_from_timm(_timm_vit(**options))


def test_vit_from_timm_rejects_other_models():
    with pytest.raises(TypeError, match="timm_model"):
        fl.models.vit_from_timm(fl.models.build("vit", image_size=8, patch_size=4))


def test_pretrained_converts_timm_vits_on_request():
    vit = fl.models.pretrained("vit_tiny_patch16_224", source="timm", faithlab_vit=True, img_size=32,
                               patch_size=8, num_classes=5)
    assert isinstance(vit, fl.models.ViT) and vit(torch.randn(1, 3, 32, 32)).shape == (1, 5)
    with pytest.raises(ValueError, match="faithlab_vit"):
        fl.models.pretrained("resnet18", faithlab_vit=True)
