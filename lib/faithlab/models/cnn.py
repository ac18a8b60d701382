"""Image classifiers: a linear model (transparent: its logits are sums of pixel contributions), a small CNN, ResNet-9 (F-Fidelity's CIFAR model), a CIFAR ResNet-18, a small
VGG and a small MobileNet. Each returns logits and exposes ``cam_layer``, the feature map Grad-CAM reads."""

from __future__ import annotations

import torch
from torch import nn

from faithlab import _validate
from faithlab.models.registry import register, scaled as _scaled


def _conv_bn(c_in: int, c_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU())


def _pool_channels_last(module: nn.Module, args: tuple):
    x = args[0]
    if x.device.type == "cpu" and x.dim() == 4 and not (torch.is_grad_enabled() and x.requires_grad) \
            and x.is_contiguous() and not x.is_contiguous(memory_format=torch.channels_last):
        y = x.contiguous(memory_format=torch.channels_last)
        y._faithlab_pool_layout = True  # read by _pool_contiguous: this hook changed the layout, not the caller
        return (y, *args[1:])
    return None


def _pool_contiguous(module: nn.Module, args: tuple, output: torch.Tensor):
    return output.contiguous() if getattr(args[0], "_faithlab_pool_layout", False) else None


def max_pool(kernel_size: int, stride: int | None = None, padding: int = 0, *, ceil_mode: bool = False) -> nn.MaxPool2d:
    """``nn.MaxPool2d`` whose CPU passes outside autograd pool in channels-last layout.

    PyTorch's CPU max-pool kernel for the default (NCHW) layout reads a strided window per output and is several
    times slower than its channels-last kernel (2 × 2 pooling of a (256, 16, 16, 16) tensor, one thread: about 5.5
    ms against 1 ms with both conversions); in the small CNNs it took half of an evaluation pass. A forward pre-hook
    hands the pool a channels-last copy and a forward hook returns the output in the caller's layout, so the values
    are the same bit for bit (a maximum is exact; only the order of the reads changes) and every later layer sees
    what it saw before. With autograd (training, gradient explainers) and on other devices the hooks do nothing.
    The module stays an ``nn.MaxPool2d``: captum's DeepLift and LRP find their rules by the module's type."""
    pool = nn.MaxPool2d(kernel_size, stride, padding, ceil_mode=ceil_mode)
    pool.register_forward_pre_hook(_pool_channels_last)
    pool.register_forward_hook(_pool_contiguous)
    return pool


@register("linear")
class LinearClassifier(nn.Module):
    """Logits = W·vec(x) + b: the contribution of input element p to the logit of class c is exactly W[c, p]·x_p
    (relative to a zero input), which makes the model's true feature importance known (:meth:`contributions`)."""

    def __init__(self, in_channels: int = 1, n_classes: int = 10, image_size: int = 16) -> None:
        super().__init__()
        side = _validate.positive_int(image_size, "image_size")
        self.shape = (_validate.positive_int(in_channels, "in_channels"), side, side)
        self.fc = nn.Linear(self.shape[0] * side * side, _validate.positive_int(n_classes, "n_classes"))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x.flatten(1))

    def contributions(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """W[target, p]·x_p per input element → x's shape: what removing element p (setting it to 0) subtracts from
        the target logit, exactly."""
        _validate.tensor(x, "x", ndim=4)
        _validate.tensor(target, "target", ndim=1)
        _validate.batch_match(x, target, "x", "target")
        if tuple(x.shape[1:]) != self.shape:
            raise ValueError(f"x must be (B, {', '.join(map(str, self.shape))}), got {tuple(x.shape)}")
        return self.fc.weight[target].view(-1, *self.shape).detach() * x


class _PooledFeatures(nn.Module):
    """A CNN whose ``features`` end in the feature map Grad-CAM reads (``cam_layer``, their last block), pooled by
    ``pool`` into the linear head ``fc``; the subclass's ``__init__`` sets the three, in that order."""

    @property
    def cam_layer(self) -> nn.Module:
        return self.features[-1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.pool(self.features(x)))


@register("small_cnn")
class SmallCNN(_PooledFeatures):
    """Three 3×3 conv blocks (ReLU; max-pool after the first two), global average pool, linear head."""

    def __init__(self, in_channels: int = 3, n_classes: int = 10, width: int = 16) -> None:
        super().__init__()
        w = _validate.positive_int(width, "width")
        self.features = nn.Sequential(
            nn.Sequential(nn.Conv2d(in_channels, w, 3, padding=1), nn.ReLU(), max_pool(2)),
            nn.Sequential(nn.Conv2d(w, 2 * w, 3, padding=1), nn.ReLU(), max_pool(2)),
            nn.Sequential(nn.Conv2d(2 * w, 2 * w, 3, padding=1), nn.ReLU()),
        )
        self.pool = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.fc = nn.Linear(2 * w, n_classes)


@register("resnet9")
class ResNet9(nn.Module):
    """F-Fidelity's ResNet-9 (App. C): prep conv64 → conv128+pool → res(128) → conv256+pool → conv512+pool →
    res(512) → global max pool → dropout → linear; every conv is 3×3+BN+ReLU; widths × ``width``.
    ``cam_layer`` is ``res2[-1]`` as in the F-Fidelity code."""

    def __init__(self, in_channels: int = 3, n_classes: int = 10, width: float = 1.0, dropout: float = 0.2) -> None:
        super().__init__()
        c1, c2, c3, c4 = (_scaled(b, width) for b in (64, 128, 256, 512))
        self.prep = _conv_bn(in_channels, c1)
        self.layer1 = nn.Sequential(_conv_bn(c1, c2), max_pool(2))
        self.res1 = nn.Sequential(_conv_bn(c2, c2), _conv_bn(c2, c2))
        self.layer2 = nn.Sequential(_conv_bn(c2, c3), max_pool(2))
        self.layer3 = nn.Sequential(_conv_bn(c3, c4), max_pool(2))
        self.res2 = nn.Sequential(_conv_bn(c4, c4), _conv_bn(c4, c4))
        self.head = nn.Sequential(nn.AdaptiveMaxPool2d(1), nn.Flatten(), nn.Dropout(dropout), nn.Linear(c4, n_classes))

    @property
    def cam_layer(self) -> nn.Module:
        return self.res2[-1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.layer1(self.prep(x))
        x = x + self.res1(x)
        x = self.layer3(self.layer2(x))
        x = x + self.res2(x)
        return self.head(x)


class BasicBlock(nn.Module):
    """ResNet basic block: two 3×3 conv+BN, identity or 1×1 projection shortcut, ReLU after the sum."""

    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.shortcut = (
            nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False), nn.BatchNorm2d(c_out))
            if stride != 1 or c_in != c_out
            else nn.Identity()
        )
        self.relu2 = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.bn2(self.conv2(self.relu1(self.bn1(self.conv1(x)))))
        return self.relu2(out + self.shortcut(x))


@register("resnet18_cifar")
class ResNet18CIFAR(nn.Module):
    """CIFAR-style ResNet-18 (ReCo/MeGe §4.7): 3×3 stem, no max-pool, 4 stages of 2 blocks with widths
    ``base_width``·(1, 2, 4, 8), global average pool, dropout, linear. ``cam_layer`` = ``layer4[-1]``."""

    def __init__(self, in_channels: int = 3, n_classes: int = 10, base_width: int = 64, dropout: float = 0.0) -> None:
        super().__init__()
        w = _validate.positive_int(base_width, "base_width")
        self.stem = nn.Sequential(nn.Conv2d(in_channels, w, 3, padding=1, bias=False), nn.BatchNorm2d(w), nn.ReLU())
        widths, stages, c_in = (w, 2 * w, 4 * w, 8 * w), [], w
        for i, c_out in enumerate(widths):
            stride = 1 if i == 0 else 2
            stages.append(nn.Sequential(BasicBlock(c_in, c_out, stride), BasicBlock(c_out, c_out, 1)))
            c_in = c_out
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(dropout),
                                  nn.Linear(c_in, n_classes))

    @property
    def cam_layer(self) -> nn.Module:
        return self.layer4[-1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.layer4(self.layer3(self.layer2(self.layer1(self.stem(x)))))
        return self.head(x)


@register("vgg_small")
class VGGSmall(nn.Module):
    """A small VGG (stands in for VGG-16): a plain stack of three blocks of two 3×3 conv+BN+ReLU with widths
    ``width``·(1, 2, 4), each followed by a 2×2 max-pool (``ceil_mode``, so odd sizes lose no row), global average
    pool, then Linear(4w, 4w) → ReLU → Dropout(``dropout``) → Linear. No skip connections; every ReLU is its own
    non-inplace ``nn.ReLU`` module. ``cam_layer`` = ``features[4]``, the last conv block before its pool (7×7 at
    28 px). Takes any H, W ≥ 8."""

    def __init__(self, in_channels: int = 3, n_classes: int = 10, width: int = 16, dropout: float = 0.5) -> None:
        super().__init__()
        w = _validate.positive_int(width, "width")
        p = _validate.fraction(dropout, "dropout")
        layers, c_in = [], _validate.positive_int(in_channels, "in_channels")
        for c_out in (w, 2 * w, 4 * w):
            layers += [nn.Sequential(_conv_bn(c_in, c_out), _conv_bn(c_out, c_out)), max_pool(2, ceil_mode=True)]
            c_in = c_out
        self.features = nn.Sequential(*layers)
        self.pool = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.classifier = nn.Sequential(nn.Linear(c_in, c_in), nn.ReLU(), nn.Dropout(p), nn.Linear(c_in, n_classes))

    @property
    def cam_layer(self) -> nn.Module:
        return self.features[4]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.pool(self.features(x)))


_ACTIVATIONS = {"relu": nn.ReLU, "hardswish": nn.Hardswish}


def _conv_bn_act(c_in: int, c_out: int, kernel: int, stride: int, groups: int, act: type[nn.Module] | None
                 ) -> nn.Sequential:
    layers = [nn.Conv2d(c_in, c_out, kernel, stride=stride, padding=kernel // 2, groups=groups, bias=False),
              nn.BatchNorm2d(c_out)]
    return nn.Sequential(*layers, act()) if act is not None else nn.Sequential(*layers)


class InvertedResidual(nn.Module):
    """MobileNetV2/V3 inverted residual: 1×1 expand (skipped when ``expand`` is 1) → 3×3 depthwise (``stride``) →
    1×1 linear projection, each conv followed by BN, the first two by ``act``; identity shortcut added when the
    stride is 1 and the channel counts match (``use_residual``)."""

    def __init__(self, c_in: int, c_out: int, stride: int, expand: int, act: type[nn.Module] = nn.ReLU) -> None:
        super().__init__()
        hidden = c_in * expand
        self.expand = _conv_bn_act(c_in, hidden, 1, 1, 1, act) if expand != 1 else nn.Identity()
        self.depthwise = _conv_bn_act(hidden, hidden, 3, stride, hidden, act)
        self.project = _conv_bn_act(hidden, c_out, 1, 1, 1, None)
        self.use_residual = stride == 1 and c_in == c_out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.project(self.depthwise(self.expand(x)))
        return x + out if self.use_residual else out


@register("mobilenet_small")
class MobileNetSmall(_PooledFeatures):
    """A small MobileNet (stands in for MobileNetV2/V3-Small): 3×3 conv stem (w) → five inverted residual blocks
    (w, t=1) · (2w, stride 2) · (2w) · (4w, stride 2) · (4w), t = ``expand`` except the first → 1×1 conv to 8w →
    global average pool → linear, w = ``width``. ``activation`` is "relu" (default: separate non-inplace
    ``nn.ReLU`` modules, as guided backprop needs) or "hardswish" (MobileNetV3's). ``cam_layer`` = ``features[-1]``,
    the final 1×1 conv block (7×7 at 28 px). Takes any H, W ≥ 8."""

    def __init__(self, in_channels: int = 3, n_classes: int = 10, width: int = 16, expand: int = 4,
                 activation: str = "relu") -> None:
        super().__init__()
        w = _validate.positive_int(width, "width")
        t = _validate.positive_int(expand, "expand")
        act = _ACTIVATIONS[_validate.one_of(activation, "activation", tuple(_ACTIVATIONS))]
        stem = _conv_bn_act(_validate.positive_int(in_channels, "in_channels"), w, 3, 1, 1, act)
        plan = [(w, 1, 1), (2 * w, 2, t), (2 * w, 1, t), (4 * w, 2, t), (4 * w, 1, t)]  # (c_out, stride, expand)
        blocks, c_in = [], w
        for c_out, stride, e in plan:
            blocks.append(InvertedResidual(c_in, c_out, stride, e, act))
            c_in = c_out
        self.features = nn.Sequential(stem, *blocks, _conv_bn_act(c_in, 8 * w, 1, 1, 1, act))
        self.pool = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.fc = nn.Linear(8 * w, n_classes)


@register("densenet_small")
class DenseNetSmall(nn.Module):
    """torchvision's DenseNet at small size (stands in for DenseNet-121 in Few-class Fidelity, spec §2.5, and for
    DenseNet-161 in TRACE, spec §5.7): ``torchvision.models.DenseNet(growth_rate, block_config, num_init_features)``
    with its 7×7/stride-2 stem and max-pool replaced by one 3×3 stride-1 conv for small images; torchvision's
    forward (dense blocks, final ``features.norm5``, ReLU, average pool, linear), except that the final ReLU is not
    in place: Excitation Backprop (TorchRay) reads the output of ``cam_layer`` = ``features.norm5`` as a leaf tensor,
    which an in-place ReLU may not overwrite. ``width`` (as the other small models take it): growth rate ``width``
    and ``2·width`` initial features, instead of ``growth_rate`` and ``num_init_features``."""

    def __init__(self, in_channels: int = 3, n_classes: int = 10, growth_rate: int = 8,
                 block_config: tuple[int, ...] = (2, 2, 2), num_init_features: int = 16,
                 width: int | None = None) -> None:
        super().__init__()
        from torchvision.models import DenseNet

        if width is not None:
            growth_rate = _validate.positive_int(width, "width")
            num_init_features = 2 * growth_rate
        c0 = _validate.positive_int(num_init_features, "num_init_features")
        self.net = DenseNet(growth_rate=_validate.positive_int(growth_rate, "growth_rate"),
                            block_config=tuple(block_config), num_init_features=c0, num_classes=n_classes)
        self.net.features.conv0 = nn.Conv2d(_validate.positive_int(in_channels, "in_channels"), c0, 3, padding=1,
                                            bias=False)
        self.net.features.pool0 = nn.Identity()

    @property
    def cam_layer(self) -> nn.Module:
        return self.net.features.norm5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = torch.relu(self.net.features(x))  # torchvision's F.relu(inplace=True), out of place
        return self.net.classifier(torch.flatten(nn.functional.adaptive_avg_pool2d(features, 1), 1))


class _SeparableBlock(nn.Module):
    """Xception's residual unit: ReLU → separable 3×3 conv (depthwise + pointwise) → BN, twice, then a 3×3 max-pool
    of stride ``stride``; the shortcut is a strided 1×1 conv + BN. Separate ReLU modules (guided backprop)."""

    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()

        def separable(a: int, b: int) -> list[nn.Module]:
            return [nn.ReLU(), nn.Conv2d(a, a, 3, padding=1, groups=a, bias=False), nn.Conv2d(a, b, 1, bias=False),
                    nn.BatchNorm2d(b)]

        self.body = nn.Sequential(*separable(c_in, c_out), *separable(c_out, c_out),
                                  max_pool(3, stride=stride, padding=1))
        self.shortcut = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False), nn.BatchNorm2d(c_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x) + self.shortcut(x)


@register("xception_small")
class XceptionSmall(nn.Module):
    """A small Xception (stands in for Xception on the CT study, spec §2.5): 3×3 conv+BN+ReLU stem (w), three
    separable residual blocks (2w stride 2, 4w stride 2, 4w stride 1), ReLU, separable conv to 8w + BN + ReLU, global
    average pool, linear. ``cam_layer`` = ``exit``, the last feature map. Takes any H, W ≥ 8."""

    def __init__(self, in_channels: int = 1, n_classes: int = 1, width: int = 8) -> None:
        super().__init__()
        w = _validate.positive_int(width, "width")
        self.stem = _conv_bn(_validate.positive_int(in_channels, "in_channels"), w)
        self.blocks = nn.Sequential(_SeparableBlock(w, 2 * w, 2), _SeparableBlock(2 * w, 4 * w, 2),
                                    _SeparableBlock(4 * w, 4 * w, 1))
        self.exit = nn.Sequential(nn.ReLU(), nn.Conv2d(4 * w, 4 * w, 3, padding=1, groups=4 * w, bias=False),
                                  nn.Conv2d(4 * w, 8 * w, 1, bias=False), nn.BatchNorm2d(8 * w), nn.ReLU())
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8 * w, n_classes))

    @property
    def cam_layer(self) -> nn.Module:
        return self.exit

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.exit(self.blocks(self.stem(x))))
