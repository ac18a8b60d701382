"""fl.models.load / preprocessing / cam_layer (issue 31: your model): specs, n_classes from the weights, weights that
do not fit, preprocessing equal to torchvision's and timm's own transforms, the CAM layer of known architectures,
the exact timm ViT conversion, and errors that name the fix. Random init, small inputs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from PIL import Image

import faithlab as fl

timm = pytest.importorskip("timm")
torchvision = pytest.importorskip("torchvision")


def _seeded(build, seed: int = 0):
    torch.manual_seed(seed)
    return build().eval()


@pytest.fixture(scope="module")
def image():
    """A non-square RGB PIL image, so resize (shorter side) and centre crop both matter."""
    pixels = np.random.default_rng(0).integers(0, 256, (300, 260, 3), dtype=np.uint8)
    return Image.fromarray(pixels)


# ------------------------------------------------------------------------------------------------------ specs
def test_torchvision_state_dict_gives_its_classes_and_logits(tmp_path):
    source = _seeded(lambda: torchvision.models.resnet18(num_classes=2))
    path = tmp_path / "resnet18.pt"
    torch.save(source.state_dict(), path)
    model = fl.models.load("torchvision:resnet18", weights=path)
    assert model.fc.out_features == 2 and not model.training and model.faithlab_spec == "torchvision:resnet18"
    x = torch.randn(2, 3, 64, 64)
    with torch.no_grad():
        assert torch.equal(model(x), source(x))
    # a checkpoint holding the state dict, and safetensors
    torch.save({"state_dict": source.state_dict(), "epoch": 3}, tmp_path / "ckpt.pt")
    from safetensors.torch import save_file

    save_file(source.state_dict(), str(tmp_path / "w.safetensors"))
    for name in ("ckpt.pt", "w.safetensors"):
        with torch.no_grad():
            assert torch.equal(fl.models.load("torchvision:resnet18", weights=tmp_path / name)(x), source(x))


def test_classifier_found_by_the_architectures_head(tmp_path):
    """torchvision's Sequential ``classifier`` (its last Linear) and timm's get_classifier()."""
    mobile = _seeded(lambda: torchvision.models.mobilenet_v3_small(num_classes=4))
    torch.save(mobile.state_dict(), tmp_path / "m.pt")
    assert fl.models.load("torchvision:mobilenet_v3_small", weights=tmp_path / "m.pt").classifier[-1].out_features == 4
    tres = _seeded(lambda: timm.create_model("resnet18", num_classes=3))
    torch.save(tres.state_dict(), tmp_path / "t.pt")
    loaded = fl.models.load("timm:resnet18", weights=tmp_path / "t.pt")
    x = torch.randn(1, 3, 32, 32)
    with torch.no_grad():
        assert loaded.get_classifier().out_features == 3 and torch.equal(loaded(x), tres(x))


def test_random_init_defaults_and_zoo_specs():
    model = fl.models.load("torchvision:resnet18")
    assert model.fc.out_features == 1000 and not model.training
    assert fl.models.load("torchvision:resnet18", n_classes=7).fc.out_features == 7
    zoo = fl.models.load("small_cnn", n_classes=3, width=4)
    assert isinstance(zoo, fl.models.SmallCNN) and zoo(torch.randn(1, 3, 16, 16)).shape == (1, 3)
    with pytest.raises(ValueError, match="n_classes=7 and num_classes=5"):
        fl.models.load("torchvision:resnet18", n_classes=7, num_classes=5)


def test_zoo_weights_infer_n_classes(tmp_path):
    source = _seeded(lambda: fl.models.build("small_cnn", n_classes=3, width=4))
    torch.save(source.state_dict(), tmp_path / "zoo.pt")
    model = fl.models.load("small_cnn", weights=tmp_path / "zoo.pt", width=4)
    x = torch.randn(2, 3, 16, 16)
    with torch.no_grad():
        assert torch.equal(model(x), source(x))


def test_weights_that_do_not_fit_name_the_keys_and_the_fix(tmp_path):
    path = tmp_path / "r18.pt"
    torch.save(torchvision.models.resnet18(num_classes=2).state_dict(), path)
    with pytest.raises(ValueError, match=r"weights .*r18.pt.* do not fit .*fc.weight: file \(2, 512\) vs model "
                                         r"\(3, 512\).*pass n_classes=2"):
        fl.models.load("torchvision:resnet18", weights=path, n_classes=3)
    with pytest.raises(ValueError, match=r"weights .* missing keys \['layer1.2.*pass the spec of the architecture"):
        fl.models.load("torchvision:resnet34", weights=path)
    with pytest.raises(FileNotFoundError, match="weights"):
        fl.models.load("torchvision:resnet18", weights=tmp_path / "absent.pt")
    torch.save({"fc.weight": torch.zeros(2, 512), "note": object.__new__(_Pickled)}, tmp_path / "code.pt")
    with pytest.raises(ValueError, match="weights: .* is not a plain tensor checkpoint"):
        fl.models.load("torchvision:resnet18", weights=tmp_path / "code.pt")


class _Pickled:
    """Anything but tensors and plain containers: refused by the weights-only loader."""


def test_unknown_specs_list_the_forms_and_close_names():
    with pytest.raises(ValueError, match=r"accepted forms are .*torchvision:<name>.*timm:<name>.*close names: .*"
                                         r"'torchvision:resnet18'"):
        fl.models.load("torchvision:resnt18")
    with pytest.raises(ValueError, match=r"close names: .*'timm:vit_tiny_patch16_224'"):
        fl.models.load("timm:vit_tiny_patch16_22")
    with pytest.raises(ValueError, match=r"close names: \['resnet9'"):
        fl.models.load("resnet_9")
    with pytest.raises(ValueError, match="accepted forms"):
        fl.models.preprocessing("keras:resnet18")
    with pytest.raises(TypeError, match="spec"):
        fl.models.load(None)


# --------------------------------------------------------------------------------------------- preprocessing
@pytest.mark.parametrize("name", ["resnet18", "resnet50", "vit_b_16", "efficientnet_b3"])
def test_torchvision_preprocessing_equals_the_weights_transforms(name, image):
    ours = fl.models.preprocessing(f"torchvision:{name}")
    theirs = torchvision.models.get_model_weights(name).DEFAULT.transforms()
    assert torch.equal(ours(image), theirs(image))
    assert ours.normalisation == (tuple(theirs.mean), tuple(theirs.std))


@pytest.mark.parametrize("name", ["vit_tiny_patch16_224", "resnet18", "convnext_tiny"])
def test_timm_preprocessing_equals_create_transform(name, image):
    from timm.data import create_transform, resolve_data_config

    with torch.device("meta"):
        model = timm.create_model(name)
    theirs = create_transform(**resolve_data_config({}, model=model))
    for ours in (fl.models.preprocessing(f"timm:{name}"), fl.models.preprocessing(model)):
        assert torch.equal(ours(image), theirs(image))


def test_preprocessing_of_loaded_zoo_and_bare_models(image):
    model = fl.models.load("torchvision:resnet50")
    assert fl.models.preprocessing(model) == fl.models.preprocessing("torchvision:resnet50")
    assert fl.models.preprocessing(model).resize == 232
    with pytest.raises(TypeError, match="spec_or_model: a bare torchvision ResNet.*'torchvision:resnet18'"):
        fl.models.preprocessing(torchvision.models.resnet18())
    vit = fl.models.load("timm:vit_tiny_patch16_224", img_size=32, patch_size=8)
    assert fl.models.preprocessing(vit).crop == (32, 32)  # its own size, not the pretrained config's 224
    zoo = fl.models.preprocessing("vit")
    assert (zoo.resize, zoo.crop, zoo.mean, zoo.std) == ((32, 32), None, (0.0,) * 3, (1.0,) * 3)
    assert zoo(image).shape == (3, 32, 32) and float(zoo(image).max()) <= 1.0
    gray = fl.models.preprocessing(fl.models.build("xception_small"))
    assert gray.mode == "L" and gray.size is None and gray(image).shape == (1, 300, 260)
    with pytest.raises(ValueError, match="not an image model"):
        fl.models.preprocessing("bilstm")
    with pytest.raises(ValueError, match="spec_or_model: CNN1D .* does not look like an image model"):
        fl.models.preprocessing(fl.models.build("cnn1d", in_channels=3, n_classes=2))
    assert fl.models.load("cnn1d", in_channels=3, n_classes=2).faithlab_preprocess is None
    with pytest.raises(TypeError, match="image must be a PIL image"):
        zoo(torch.zeros(3, 8, 8))
    with pytest.raises(ValueError, match="mean must be a tuple of 3"):
        fl.models.Preprocess(resize=8, crop=None, mean=(0.5,), std=(1.0,) * 3)


# ----------------------------------------------------------------------------------------------- CAM layers
def test_cam_layer_follows_cam_layers_table():
    for name, layer in fl.models.CAM_LAYERS.items():
        with torch.device("meta"):
            model = timm.create_model(name) if name == "legacy_xception" else torchvision.models.get_model(
                name, **({"init_weights": False} if name == "googlenet" else {}))
        assert fl.models.cam_layer(model) == layer, name
    with torch.device("meta"):
        assert fl.models.cam_layer(torchvision.models.efficientnet_b0()) == "features.8"
        assert fl.models.cam_layer(torchvision.models.convnext_tiny()) == "features.7"
        assert fl.models.cam_layer(timm.create_model("convnext_tiny")) == "stages.3"
        assert fl.models.cam_layer(timm.create_model("efficientnet_b0")) == "bn2"
    assert fl.models.cam_layer(fl.models.build("resnet9")) == "res2.1"  # the model's own cam_layer


@pytest.fixture(scope="module")
def cnns():
    return {name: _seeded(build) for name, build in {
        "resnet18": lambda: torchvision.models.resnet18(num_classes=3),
        "vgg11": lambda: torchvision.models.vgg11(num_classes=3),
        "densenet121": lambda: torchvision.models.densenet121(num_classes=3),
        "mobilenet_v3_small": lambda: torchvision.models.mobilenet_v3_small(num_classes=3),
        "timm_resnet18": lambda: timm.create_model("resnet18", num_classes=3),
    }.items()}


@pytest.mark.parametrize("name, layer", [("resnet18", "layer4"), ("vgg11", "features.19"),
                                         ("densenet121", "features.norm5"), ("mobilenet_v3_small", "features.12"),
                                         ("timm_resnet18", "layer4")])
def test_gradcam_default_layer_equals_the_explicit_layer(cnns, name, layer):
    model = cnns[name]
    x = torch.randn(2, 3, 64, 64, generator=torch.Generator().manual_seed(1))
    auto = fl.explainers.explain(model, x, torch.tensor([0, 2]), method="gradcam")
    explicit = fl.explainers.explain(model, x, torch.tensor([0, 2]), method="gradcam", layer=layer)
    assert float(explicit.abs().sum()) > 0 and torch.equal(auto, explicit)


def test_unknown_architecture_uses_the_last_conv_with_a_warning():
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.Conv2d(4, 4, 3),
                                torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(4, 2)).eval()
    with pytest.warns(UserWarning, match="last Conv2d '2'"):
        assert fl.models.cam_layer(model) == "2"
    with pytest.raises(ValueError, match="no Conv2d"):
        fl.models.cam_layer(torch.nn.Linear(3, 2))


def test_cam_layer_on_a_vit_names_the_vit_methods():
    with torch.device("meta"):
        plain = timm.create_model("vit_tiny_patch16_224")
    for model in (plain, fl.models.build("vit", image_size=8, patch_size=4)):
        with pytest.raises(ValueError, match="CAMs need a convolutional layer.*rollout.*attention_gradcam"):
            fl.models.cam_layer(model)
    from faithlab.explainers import METHODS

    assert set(fl.models.names.VIT_METHODS) == set(METHODS)


# ---------------------------------------------------------------------------------------------- ViT conversion
def test_timm_vit_is_converted_exactly_and_explainable(tmp_path):
    source = _seeded(lambda: timm.create_model("vit_tiny_patch16_224", img_size=32, patch_size=8, num_classes=3))
    with torch.no_grad():  # timm initialises biases and the CLS token to 0: make them matter
        for name, p in source.named_parameters():
            if name.endswith("bias") or name == "cls_token":
                p.normal_(std=0.1)
    torch.save(source.state_dict(), tmp_path / "vit.pt")
    model = fl.models.load("timm:vit_tiny_patch16_224", weights=tmp_path / "vit.pt", img_size=32, patch_size=8)
    assert isinstance(model, fl.models.ViT) and model.head.out_features == 3
    x = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        assert torch.allclose(model(x), source(x), atol=1e-5)
    maps = fl.explainers.explain(model, x, torch.tensor([0, 1]), method="attention_gradcam")
    assert maps.shape == (2, 1, 32, 32) and bool(torch.isfinite(maps).all())
    kept = fl.models.load("timm:vit_tiny_patch16_224", weights=tmp_path / "vit.pt", explainable=False, img_size=32,
                          patch_size=8)
    assert type(kept).__name__ == "VisionTransformer"


def test_unconvertible_vit_stays_with_a_note():
    with pytest.warns(UserWarning, match="stays a timm model.*register"):
        model = fl.models.load("timm:vit_tiny_patch16_224", img_size=32, patch_size=8, reg_tokens=1)
    assert type(model).__name__ == "VisionTransformer"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fl.models.load("timm:resnet18")  # a CNN: nothing to convert, no note


@pytest.mark.parametrize("method", ["attention_gradcam", "lrp", "conservative_lrp"])
def test_vit_explainers_on_a_plain_timm_vit_name_the_fix(method):
    plain = _seeded(lambda: timm.create_model("vit_tiny_patch16_224", img_size=32, patch_size=8, num_classes=3))
    with pytest.raises(TypeError, match=r"fl\.models\.vit_from_timm\(model\).*fl\.models\.load\(\"timm:"):
        fl.explainers.explain(plain, torch.randn(1, 3, 32, 32), torch.tensor([0]), method=method)
