"""Every image mode read right (issue 70, items 1–2): generated files of each PIL mode a folder of real scans or
photos holds, read by ``fl.data.image_folder`` through a ``Preprocess`` without resize (so each expected tensor is
computed by hand from the pixel values written), and image bombs refused before decoding, naming the file and the
limit. On 7507507 the 16-bit files came out white (PIL's conversion clips at 255), the bomb raised PIL's
DecompressionBombError without the file's name, and the EXIF orientation was ignored."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

import faithlab as fl
from faithlab import _pixels

RGB = fl.models.Preprocess(resize=None, crop=None, mean=(0.0, 0.0, 0.0), std=(1.0, 1.0, 1.0))
GREY = fl.models.Preprocess(resize=None, crop=None, mean=(0.0,), std=(1.0,), mode="L")


def _read(tmp_path: Path, save, preprocess=RGB, **kwargs) -> torch.Tensor:
    """The one image a flat folder holds, written by ``save(path_without_suffix)``, as image_folder reads it."""
    folder = tmp_path / "images"
    folder.mkdir(parents=True, exist_ok=True)
    save(folder / "img")
    data = fl.data.image_folder(folder, preprocess=preprocess, labels=None, **kwargs)
    assert len(data) == 1
    return data[0]


def _grey_as_rgb(values: np.ndarray) -> torch.Tensor:
    x = torch.from_numpy(values.astype(np.float32))
    return x.expand(3, *x.shape)


def _png16(path: Path, array: np.ndarray) -> None:
    """A 16-bit PNG written byte by byte (PIL writes 16-bit grey but not 16-bit colour): colour type 0, 2 or 6."""
    h, w = array.shape[:2]
    channels = 1 if array.ndim == 2 else array.shape[2]
    rows = b"".join(b"\x00" + array[i].astype(">u2").tobytes() for i in range(h))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    colour = {1: 0, 3: 2, 4: 6}[channels]
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 16, colour, 0, 0, 0))
                     + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


SIXTEEN = np.array([[0, 1, 255, 256], [1000, 32768, 65534, 65535]], dtype=np.uint16)


@pytest.mark.parametrize("suffix", [".png", ".tif"])
def test_16_bit_grey_is_scaled_by_its_bit_depth(tmp_path, suffix):
    """A 16-bit grey slice (PNG or TIFF): value / 65535, not clipped at 255 (7507507 read every value ≥ 255 as 1)."""
    x = _read(tmp_path, lambda p: Image.fromarray(SIXTEEN).save(p.with_suffix(suffix)))
    torch.testing.assert_close(x, _grey_as_rgb(SIXTEEN / 65535), rtol=0, atol=1e-7)
    assert float((x == 1).float().mean()) == 1 / 8  # only 65535 is white (7507507: every value from 255)
    grey = _read(tmp_path / "g", lambda p: Image.fromarray(SIXTEEN).save(p.with_suffix(suffix)), GREY)
    torch.testing.assert_close(grey, torch.from_numpy(SIXTEEN / 65535).float()[None], rtol=0, atol=1e-7)


def test_16_bit_png_written_by_hand_and_big_endian_tiff(tmp_path):
    """The PNG as a scanner writes it (big-endian samples) and a big-endian TIFF ("I;16B") read the same."""
    x = _read(tmp_path, lambda p: _png16(p.with_suffix(".png"), SIXTEEN))
    torch.testing.assert_close(x, _grey_as_rgb(SIXTEEN / 65535), rtol=0, atol=1e-7)
    image = Image.frombytes("I;16B", (4, 2), SIXTEEN.astype(">u2").tobytes())
    assert _pixels.standard(image).mode == "F"
    torch.testing.assert_close(torch.from_numpy(np.array(_pixels.standard(image))), torch.from_numpy(
        (SIXTEEN / 65535).astype(np.float32)), rtol=0, atol=1e-7)


def test_16_bit_grey_resized_matches_the_8_bit_image_it_scales(tmp_path):
    """With a resize, a 16-bit image of the values v × 257 gives the 8-bit image of v's tensor within PIL's 8-bit
    rounding (the 16-bit one is resized in floats, the 8-bit one rounded to bytes)."""
    pre = fl.models.Preprocess(resize=9, crop=(9, 9), mean=(0.5, 0.5, 0.5), std=(0.25, 0.25, 0.25))
    v = np.random.default_rng(0).integers(0, 256, (20, 30), dtype=np.uint8)
    eight = _read(tmp_path / "a", lambda p: Image.fromarray(v).save(p.with_suffix(".png")), pre)
    sixteen = _read(tmp_path / "b", lambda p: Image.fromarray(v.astype(np.uint16) * 257).save(
        p.with_suffix(".png")), pre)
    assert float((eight - sixteen).abs().max()) * 0.25 * 255 < 1.0


def test_16_bit_colour_png_keeps_its_high_byte(tmp_path):
    """16-bit RGB and RGBA PNGs: PIL reads the high byte (scaled by the bit depth, 8 bits kept); alpha dropped."""
    rgb = np.random.default_rng(1).integers(0, 65536, (3, 4, 3)).astype(np.uint16)
    x = _read(tmp_path / "rgb", lambda p: _png16(p.with_suffix(".png"), rgb))
    torch.testing.assert_close(x, torch.from_numpy((rgb >> 8) / 255).permute(2, 0, 1).float(), rtol=0, atol=1e-7)
    rgba = np.random.default_rng(2).integers(0, 65536, (3, 4, 4)).astype(np.uint16)
    x = _read(tmp_path / "rgba", lambda p: _png16(p.with_suffix(".png"), rgba))
    torch.testing.assert_close(x, torch.from_numpy((rgba[..., :3] >> 8) / 255).permute(2, 0, 1).float(), rtol=0,
                               atol=1e-7)


def test_palette_cmyk_la_rgba_and_bilevel(tmp_path):
    """Palette → its colours; CMYK → PIL's (255 − C)(255 − K)/255; LA and RGBA → alpha dropped; "1" → 0 or
    1."""
    palette = Image.new("P", (3, 2))
    palette.putpalette([10, 20, 30, 200, 100, 0] + [0] * 762)
    palette.putdata([0, 1, 1, 0, 0, 1])
    x = _read(tmp_path / "p", lambda p: palette.save(p.with_suffix(".png")))
    expected = torch.tensor([[10, 20, 30], [200, 100, 0]], dtype=torch.float32)[torch.tensor([0, 1, 1, 0, 0, 1])]
    torch.testing.assert_close(x, (expected / 255).T.reshape(3, 2, 3), rtol=0, atol=1e-7)

    cmyk = Image.new("CMYK", (2, 2), (10, 20, 30, 40))
    x = _read(tmp_path / "c", lambda p: cmyk.save(p.with_suffix(".tif")))
    rgb = [round((255 - c) * (255 - 40) / 255) for c in (10, 20, 30)]
    torch.testing.assert_close(x, torch.tensor(rgb, dtype=torch.float32)[:, None, None].expand(3, 2, 2) / 255,
                               rtol=0, atol=1.5 / 255)

    la = np.stack([np.array([[0, 128], [255, 7]], np.uint8), np.array([[0, 50, ], [255, 0]], np.uint8)], -1)
    x = _read(tmp_path / "la", lambda p: Image.fromarray(la, mode="LA").save(p.with_suffix(".png")))
    torch.testing.assert_close(x, _grey_as_rgb(la[..., 0] / 255), rtol=0, atol=1e-7)

    rgba = np.random.default_rng(3).integers(0, 256, (2, 3, 4), dtype=np.uint8)
    x = _read(tmp_path / "rgba", lambda p: Image.fromarray(rgba, mode="RGBA").save(p.with_suffix(".png")))
    torch.testing.assert_close(x, torch.from_numpy(rgba[..., :3] / 255).permute(2, 0, 1).float(), rtol=0, atol=1e-7)

    bits = np.array([[True, False, True], [False, False, True]])
    x = _read(tmp_path / "one", lambda p: Image.fromarray(bits).save(p.with_suffix(".png")))
    torch.testing.assert_close(x, _grey_as_rgb(bits.astype(np.float64)), rtol=0, atol=0)


def test_exif_orientation_is_applied(tmp_path):
    """A PNG with EXIF orientation 6 (the camera turned 90° clockwise) is read upright: turned 90° clockwise."""
    v = np.arange(6, dtype=np.uint8).reshape(2, 3) * 40
    image = Image.fromarray(v)
    exif = image.getexif()
    exif[0x0112] = 6

    x = _read(tmp_path, lambda p: image.save(p.with_suffix(".png"), exif=exif), GREY)
    torch.testing.assert_close(x[0], torch.from_numpy(np.rot90(v, k=-1) / 255).float(), rtol=0, atol=1e-7)


def test_one_pixel_image(tmp_path):
    """A 1 × 1 image resized to the model's size is that pixel everywhere."""
    pre = fl.models.Preprocess(resize=7, crop=(7, 7), mean=(0.0, 0.0, 0.0), std=(1.0, 1.0, 1.0))
    x = _read(tmp_path, lambda p: Image.new("RGB", (1, 1), (255, 0, 51)).save(p.with_suffix(".png")), pre)
    torch.testing.assert_close(x, torch.tensor([1.0, 0.0, 0.2])[:, None, None].expand(3, 7, 7), rtol=0,
                               atol=1e-6)


def test_float_and_32_bit_tiffs_by_their_stated_range(tmp_path):
    """Float or 32-bit integer TIFFs: scaled by SMinSampleValue/SMaxSampleValue when stated; floats in [0, 1] kept
    as they are; without a range (or with NaN) refused naming the file."""
    from PIL import TiffImagePlugin

    hu = np.array([[-1000, 0], [400, 3000]], dtype=np.int32)
    info = TiffImagePlugin.ImageFileDirectory_v2()
    info[340], info[341] = -1000.0, 3000.0
    info.tagtype[340] = info.tagtype[341] = 12  # TIFF's DOUBLE
    x = _read(tmp_path / "hu", lambda p: Image.fromarray(hu).save(p.with_suffix(".tif"), tiffinfo=info), GREY)
    torch.testing.assert_close(x[0], torch.from_numpy((hu + 1000) / 4000).float(), rtol=0, atol=1e-7)

    unit = np.array([[0.0, 0.25], [0.5, 1.0]], dtype=np.float32)
    x = _read(tmp_path / "unit", lambda p: Image.fromarray(unit).save(p.with_suffix(".tif")), GREY)
    torch.testing.assert_close(x[0], torch.from_numpy(unit), rtol=0, atol=0)

    for name, array in (("raw", hu), ("hot", unit * 4), ("nan", np.where(unit > 0.3, np.nan, unit))):
        folder = tmp_path / name
        folder.mkdir()
        Image.fromarray(array).save(folder / "slice.tif")
        data = fl.data.image_folder(folder, preprocess=GREY, labels=None)
        with pytest.raises(ValueError, match=r"'slice\.tif'.*(no stated range|NaN)"):
            data.image(0)


def test_lab_is_refused_naming_the_file(tmp_path):
    """PIL converts LAB to RGB without a colour profile: refused, not read as if it were RGB."""
    with pytest.raises(ValueError, match="image.*LAB"):
        RGB(Image.new("LAB", (2, 2), (50, 0, 0)))
    with pytest.raises(ValueError, match="LAB"):
        _pixels.standard(Image.new("LAB", (2, 2)), "the file 'x.tif'")


def test_an_image_bomb_is_refused_before_decoding_naming_the_file_and_the_limit(tmp_path):
    """A 20,000 × 20,000 palette PNG (about 48 KB): ValueError naming the file, its pixels and the limit, from
    image() and tensors() (7507507: PIL's DecompressionBombError without the file); a smaller max_pixels refuses a
    file just over it, and a larger one (up to PIL's own ceiling) lets a big image through."""
    folder = tmp_path / "bomb"
    folder.mkdir()
    Image.new("P", (20_000, 20_000)).save(folder / "bomb.png", optimize=True)
    assert (folder / "bomb.png").stat().st_size < 200_000
    data = fl.data.image_folder(folder, preprocess=RGB, labels=None)
    for read in (lambda: data.image(0), lambda: data.tensors(model=torch.nn.Flatten())):
        with pytest.raises(ValueError, match=r"'bomb\.png'.*400,000,000 pixels.*89,478,485 \(max_pixels"):
            read()

    small = tmp_path / "small"
    small.mkdir()
    Image.new("RGB", (11, 10)).save(small / "a.png")
    with pytest.raises(ValueError, match=r"'a\.png'.*11 × 10 = 110 pixels, over the limit of 109"):
        fl.data.image_folder(small, preprocess=RGB, labels=None, max_pixels=109).image(0)
    assert fl.data.image_folder(small, preprocess=RGB, labels=None, max_pixels=110).image(0).size == (11, 10)
    Image.new("L", (10_000, 9_000)).save(small / "a.png")  # 90 M pixels: over the default, under PIL's ceiling
    with pytest.raises(ValueError, match="max_pixels"):
        fl.data.image_folder(small, preprocess=RGB, labels=None).image(0)
    assert fl.data.image_folder(small, preprocess=RGB, labels=None, max_pixels=100_000_000).image(0).size == (
        10_000, 9_000)
    for bad in (0, -1, 1.5, True, 10 ** 12):
        with pytest.raises(ValueError, match="max_pixels must be an int"):
            fl.data.image_folder(small, preprocess=RGB, labels=None, max_pixels=bad)


def test_a_tiffs_stated_range_wins_over_its_bit_depth(tmp_path):
    """12-bit camera data in 16-bit samples, with MaxSampleValue 4095 (tags 280/281) or SMaxSampleValue: scaled by
    that range, not by 65535 (which would leave it nearly black, at most 0.0625)."""
    from PIL import TiffImagePlugin

    twelve = np.array([[0, 1000], [2048, 4095]], dtype=np.uint16)
    for low, high, kind in ((280, 281, 3), (340, 341, 12)):  # SHORT, DOUBLE
        info = TiffImagePlugin.ImageFileDirectory_v2()
        info[low], info[high] = 0, 4095
        info.tagtype[low] = info.tagtype[high] = kind
        x = _read(tmp_path / str(low), lambda p: Image.fromarray(twelve).save(p.with_suffix(".tif"), tiffinfo=info),
                  GREY)
        torch.testing.assert_close(x[0], torch.from_numpy(twelve / 4095).float(), rtol=0, atol=1e-7)
    info = TiffImagePlugin.ImageFileDirectory_v2()
    info[280], info[281] = 0, 1000
    info.tagtype[280] = info.tagtype[281] = 3
    folder = tmp_path / "over"
    folder.mkdir()
    Image.fromarray(twelve).save(folder / "over.tif", tiffinfo=info)
    with pytest.raises(ValueError, match=r"'over\.tif'.*outside the range \[0, 1000\]"):
        fl.data.image_folder(folder, preprocess=GREY, labels=None).image(0)


def test_damaged_exif_keeps_the_image_as_stored(tmp_path):
    """An EXIF block PIL cannot parse says no orientation: the image is read as stored, without a warning (7507507's
    reader ignored EXIF; an exif_transpose left unguarded raised SyntaxError here)."""
    import warnings

    v = np.arange(6, dtype=np.uint8).reshape(2, 3) * 40

    def save(p):
        Image.fromarray(v).save(p.with_suffix(".png"), exif=b"Exif\x00\x00garbage that is not TIFF")

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = _read(tmp_path, save, GREY)
    torch.testing.assert_close(x[0], torch.from_numpy(v / 255).float(), rtol=0, atol=1e-7)


def test_one_pixel_16_bit_grey_image(tmp_path):
    """A 1 × 1 16-bit slice resized to the model's size is its value / 65535 everywhere."""
    pre = fl.models.Preprocess(resize=5, crop=(5, 5), mean=(0.0,), std=(1.0,), mode="L")
    x = _read(tmp_path, lambda p: Image.fromarray(np.array([[30000]], dtype=np.uint16)).save(p.with_suffix(".png")),
              pre)
    torch.testing.assert_close(x, torch.full((1, 5, 5), 30000 / 65535), rtol=0, atol=1e-6)
