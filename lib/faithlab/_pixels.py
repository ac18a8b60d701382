"""Image files and PIL images read faithfully: what :func:`faithlab.data.image_folder` and
:class:`faithlab.models.Preprocess` share.

:func:`open_image` reads a file with a size limit checked on the header, before any pixel is decoded (an image bomb,
a 48 KB PNG of 20,000 × 20,000 pixels, is refused naming the file and the limit), applies the EXIF orientation and
hands the image to :func:`standard`. :func:`standard` maps every PIL mode to one that keeps its values:

- 8-bit modes are kept as they are ("L", "RGB", "1", palette, "LA", "PA", "RGBA", "CMYK", "YCbCr", "HSV", ...):
  the preprocessing converts them with PIL to the model's "L" or "RGB" (alpha dropped, torchvision's rule) and
  reads value / 255, exactly as torchvision does;
- 16-bit grey ("I;16", "I;16B", "I;16L", "I;16N": PNG and TIFF scans, CT and microscopy slices) becomes a float
  image ("F") scaled by the bit depth, value / 65535, or by the range a TIFF states (below); PIL itself clips them at
  255 when it converts them to "L" or "RGB" (a CT slice turns white). 16-bit colour PNGs are read by PIL as 8-bit
  "RGB"/"RGBA" (the high byte: scaled by the bit depth, 8 bits kept);
- a TIFF's stated range wins over the bit depth: SMinSampleValue/SMaxSampleValue (tags 340/341), else
  MinSampleValue/MaxSampleValue (280/281; e.g. 0–4095 for a 12-bit camera's data in 16-bit samples), mapped to
  [0, 1]; a PNG has no such statement (its samples are scaled to the full 16 bits by the format's rule);
- 32-bit integer ("I") and float ("F") images have no bit depth that says which value is white: they need a
  stated range, except an "I" image from a 16-bit PNG (older PIL: value / 65535) and a float image whose values all
  lie in [0, 1], kept as it is; anything else is refused, as are NaN or infinite values and the "LAB" colour space
  (PIL converts it without a colour profile).

torchvision's ``ImageFolder`` loader (``Image.open(f).convert("RGB")``) clips 16-bit images and ignores the EXIF
orientation, hence this module; PIL does the decoding and every 8-bit conversion.
"""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path

import numpy as np

__all__ = ["MAX_PIXELS", "UnmappableImage", "open_image", "standard"]

MAX_PIXELS = 89_478_485
"""The default largest image (width × height) read: PIL's own warning threshold (``PIL.Image.MAX_IMAGE_PIXELS``,
about 9,459 × 9,459), far above any classifier's input and below what a decoded bomb needs in memory (PIL raises at
twice it, which is the most that can be asked for)."""

_SIXTEEN_BIT = ("I;16", "I;16B", "I;16L", "I;16N")
_EIGHT_BIT = ("L", "RGB", "1", "P", "PA", "LA", "RGBA", "RGBa", "RGBX", "CMYK", "YCbCr", "HSV")
"""Modes of 8 bits per channel that PIL converts to "L" and "RGB" itself (as torchvision's transforms do)."""


class UnmappableImage(ValueError):
    """An image whose values cannot be mapped to [0, 1] faithfully, or one over the size limit."""


def _tiff_range(image) -> tuple[float, float] | None:
    """The range of sample values a TIFF states: SMinSampleValue/SMaxSampleValue (340/341), else
    MinSampleValue/MaxSampleValue (280/281), when the file gives both ends (one value each, or one per channel all
    equal) and the upper is above the lower; None otherwise (every other format)."""
    tags = getattr(image, "tag_v2", None)
    if tags is None:
        return None
    for low, high in ((340, 341), (280, 281)):
        if low not in tags or high not in tags:
            continue
        lo, hi = (v if isinstance(v, (tuple, list)) else (v,) for v in (tags[low], tags[high]))
        if len(lo) and len(hi) and len(set(lo)) == 1 and len(set(hi)) == 1 and float(hi[0]) > float(lo[0]):
            return float(lo[0]), float(hi[0])
    return None


def _scaled(values: np.ndarray, lo: float, hi: float, what: str, stated: str):
    """``values`` mapped from [lo, hi] to [0, 1] as a float image, or UnmappableImage when some lie outside."""
    from PIL import Image

    if values.min() < lo or values.max() > hi:
        raise UnmappableImage(f"{what} holds values in [{values.min():g}, {values.max():g}] outside the range "
                              f"[{lo:g}, {hi:g}] {stated}")
    return Image.fromarray(((values - lo) / (hi - lo)).astype(np.float32), mode="F")


def standard(image, what: str = "image"):
    """``image`` (a PIL image) in a mode whose values :class:`~faithlab.models.Preprocess` maps to [0, 1] without
    loss of range: an 8-bit mode as it is (PIL converts it, value / 255) or "F" (floats already in [0, 1]);
    :class:`UnmappableImage` (a ValueError) naming ``what`` when no mapping is faithful. The rules are the
    module's."""
    from PIL import Image

    mode = image.mode
    if mode in _EIGHT_BIT:
        return image
    if mode == "La":  # alpha premultiplied: PIL converts it only to "LA"
        return image.convert("LA")
    if mode in _SIXTEEN_BIT or mode in ("I", "F"):
        values = np.asarray(image).astype(np.float64)
        if values.ndim != 2:
            raise UnmappableImage(f"{what}: a {mode} image of shape {values.shape} is not one grey channel")
        if not np.isfinite(values).all():
            raise UnmappableImage(f"{what} holds NaN or infinite values; an image needs finite pixel values")
        stated = _tiff_range(image)
        if stated is not None:
            return _scaled(values, *stated, what, "its TIFF tags state")
        if mode in _SIXTEEN_BIT or (mode == "I" and getattr(image, "format", None) == "PNG"):  # older PIL: "I"
            return _scaled(values, 0.0, 65535.0, what, "of 16-bit samples")
        if mode == "F" and values.min() >= 0 and values.max() <= 1:
            return Image.fromarray(values.astype(np.float32), mode="F")
        kind = "32-bit integer" if mode == "I" else "floating-point"
        raise UnmappableImage(f"{what} is a {kind} image with values in [{values.min():g}, {values.max():g}] and "
                              "no stated range, so which value is black and which white is unknown; save it as 8- "
                              "or 16-bit, as floats in [0, 1], or as a TIFF with SMinSampleValue/SMaxSampleValue")
    if mode == "LAB":
        raise UnmappableImage(f"{what} is in the LAB colour space, which PIL converts to RGB without a colour "
                              "profile; save it as RGB")
    raise UnmappableImage(f"{what} has the PIL mode {mode!r}, which faithlab does not map to pixel values; save it "
                          "as 8- or 16-bit grey or RGB")


def check_pixels(max_pixels, name: str = "max_pixels") -> int:
    """``max_pixels`` as an int in 1 .. 2 × ``PIL.Image.MAX_IMAGE_PIXELS`` (PIL refuses larger ones itself), or a
    ValueError naming ``name``."""
    from PIL import Image

    ceiling = 2 * Image.MAX_IMAGE_PIXELS if Image.MAX_IMAGE_PIXELS else None
    if not isinstance(max_pixels, int) or isinstance(max_pixels, bool) or max_pixels < 1 or (
            ceiling is not None and max_pixels > ceiling):
        raise ValueError(f"{name} must be an int from 1 to {ceiling} (twice PIL.Image.MAX_IMAGE_PIXELS, where PIL "
                         f"refuses images itself), got {max_pixels!r}")
    return max_pixels


def open_image(path: str | os.PathLike, *, max_pixels: int = MAX_PIXELS, what: str | None = None):
    """The image in the file ``path``, decoded, EXIF-oriented (``PIL.ImageOps.exif_transpose``: the way a camera
    photo is meant to be seen) and in a :func:`standard` mode, detached from the file.

    An image of more than ``max_pixels`` pixels (width × height, read from the header before any pixel is decoded)
    raises :class:`UnmappableImage` naming the file, its size and the limit. Other failures propagate as PIL raises
    them (OSError for a truncated or unknown file); ``what`` names the file in messages (default: the path)."""
    from PIL import Image, ImageOps

    what = str(path) if what is None else what
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # the limit below is this module's
        try:
            image = Image.open(Path(path))
        except Image.DecompressionBombError as err:  # over twice PIL's limit: PIL refuses it in open()
            found = re.search(r"\((\d+) pixels\)", str(err))
            size = f"{int(found.group(1)):,} pixels" if found else "more pixels than PIL opens"
            raise UnmappableImage(f"{what} has {size}, over the limit of {max_pixels:,} (max_pixels; it may be an "
                                  "image bomb)") from None
        with image:
            width, height = image.size
            if width * height > max_pixels:
                raise UnmappableImage(f"{what} has {width:,} × {height:,} = {width * height:,} pixels, over the "
                                      f"limit of {max_pixels:,} (max_pixels; it may be an image bomb)")
            image.load()
            # turned in place so that the opened file's TIFF range tags stay readable by standard(); EXIF data
            # that PIL cannot parse (a damaged block) says no orientation, and the image is kept as stored
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # PIL's "Corrupt EXIF data"
                try:
                    ImageOps.exif_transpose(image, in_place=True)
                except Exception:  # noqa: BLE001 -- SyntaxError, struct.error, ... from PIL's EXIF parser
                    pass
            out = standard(image, what)
            return out.copy() if out is image else out
