"""Argument checks shared by the library. Each raises ValueError/TypeError naming the argument.

A tensor is checked once per call: inside a :func:`checked` block (``fl.evaluate`` opens one after checking its
inputs at the boundary) a tensor whose storage the block holds skips the checks that read or describe its data (the
NaN/inf scan of :func:`finite`, :func:`tensor`'s emptiness check); the checks a caller asks of it (its rank, a
floating dtype) still run, since they differ between callers."""

from __future__ import annotations

import contextlib
import contextvars
import errno
import numbers
import os
import pickle
import re
import struct
from collections.abc import Sequence

import torch

# storage data pointer -> the checked views on it: (the view, kept alive so that the storage cannot be freed and its
# address reused; its first and last element + 1 in the storage; its dtype; its version counter when checked)
_CHECKED: contextvars.ContextVar[dict[int, list[tuple]] | None] = contextvars.ContextVar("faithlab_checked",
                                                                                         default=None)


@contextlib.contextmanager
def checked(*values):
    """Inside the block, the tensors ``values`` count as checked, and so does every view inside one of them (a chunk
    of x is a slice of it) with its dtype, as long as none was changed in place; :func:`trust` adds more. Blocks
    nest; leaving one forgets what it added (and lets the tensors go)."""
    outer = _CHECKED.get()
    token = _CHECKED.set({k: list(v) for k, v in (outer or {}).items()})
    try:
        trust(*values)
        yield
    finally:
        _CHECKED.reset(token)


def trust(*values) -> None:
    """Count the tensors among ``values`` as checked until the innermost :func:`checked` block ends (outside one:
    nothing). For tensors the caller has checked, or built from checked ones (a chunk, the predictions)."""
    held = _CHECKED.get()
    if held is None:
        return
    for v in values:
        where = _extent(v)
        version = _version(v)
        if where is not None and version is not None:
            held.setdefault(where[0], []).append((v, where[1], where[2], v.dtype, version))


def _version(value) -> int | None:
    """The version counter torch bumps at every in-place change of the tensor or a view of it (None: an inference
    tensor, which has none, and is then always checked)."""
    try:
        return value._version
    except (AttributeError, RuntimeError):
        return None


def _extent(value) -> tuple[int, int, int] | None:
    """(storage data pointer, first element, last element + 1) of a strided tensor on a real device with elements
    and non-negative strides (None: nothing to key by, e.g. a meta, sparse or batched tensor, which is always
    checked)."""
    if (not isinstance(value, torch.Tensor) or value.layout != torch.strided or value.device.type == "meta"
            or value.numel() == 0 or any(st < 0 for st in value.stride())):
        return None
    try:
        ptr = value.untyped_storage().data_ptr()
    except (NotImplementedError, RuntimeError):  # e.g. a functorch batched tensor: no storage to key by
        return None
    first = value.storage_offset()
    return ptr, first, first + 1 + sum((n - 1) * st for n, st in zip(value.shape, value.stride()))


def is_checked(value) -> bool:
    """Whether a surrounding :func:`checked` block holds a view that contains ``value`` (same storage, dtype and
    device, ``value``'s elements inside it) and that has not been changed in place since."""
    held = _CHECKED.get()
    if not held:
        return False
    where = _extent(value)
    if where is None:
        return False
    for kept, first, end, dtype, version in held.get(where[0], ()):
        if (dtype == value.dtype and kept.device == value.device and first <= where[1] and where[2] <= end
                and _version(kept) == version):
            return True
    return False


def tensor(value, name: str, *, ndim: int | Sequence[int] | None = None, floating: bool = False) -> torch.Tensor:
    """Check that ``value`` is a tensor (optionally of given rank(s) and floating dtype) and return it."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if value.ndim not in allowed:
            raise ValueError(f"{name} must have {' or '.join(map(str, allowed))} dimensions, got shape {tuple(value.shape)}")
    if floating and not value.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {value.dtype}")
    if not is_checked(value):
        _tensor_data(value, name)
    return value


def _tensor_data(value: torch.Tensor, name: str) -> None:
    """What :func:`tensor` checks of the data itself, once per call (see :func:`checked`)."""
    if value.ndim > 0 and value.shape[0] == 0:
        raise ValueError(f"{name} is empty (batch dimension of size 0)")


def attribution_map(value: torch.Tensor, name: str = "attributions", like: torch.Tensor | None = None) -> torch.Tensor:
    """The one dtype rule of attribution maps, shared by every metric: a floating map is returned as it is; an
    integer or bool map (a binary mask, a superpixel selection, a segmentation: every metric only ranks or weighs
    the values) is converted to a floating dtype, ``like``'s (the inputs x) where it is floating, else float32; a
    complex map is refused with a TypeError naming ``name``. ``value`` must already be a tensor."""
    if value.is_floating_point():
        return value
    if value.is_complex():
        raise TypeError(f"{name} must hold real values (floating-point, integer or bool), got dtype {value.dtype}")
    dtype = like.dtype if like is not None and like.is_floating_point() else torch.float32
    return value.to(dtype)


def inputs(x: torch.Tensor, name: str = "x") -> None:
    """Raise unless ``x`` can be a model's input: floating point, or integer token ids ``(B, L)``."""
    if x.is_complex() or x.dtype == torch.bool or (x.ndim > 2 and not x.is_floating_point()):
        raise TypeError(f"{name} of shape {tuple(x.shape)} must be floating-point (only token ids (B, L) are "
                        f"integers), got dtype {x.dtype}")


PROGRESS_ENV = "FAITHLAB_PROGRESS"
_PROGRESS_OFF = {"0", "false", "no", "off"}


def progress(value: bool | None, name: str = "progress") -> bool:
    """Whether a progress bar is shown: ``value`` if it is a bool, else (None) whether the environment variable
    ``FAITHLAB_PROGRESS`` leaves bars on (anything but 0/false/no/off; the study runner sets 0 for its kernels)."""
    if value is None:
        return os.environ.get(PROGRESS_ENV, "1").strip().lower() not in _PROGRESS_OFF
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True, False or None (the environment's FAITHLAB_PROGRESS), got {value!r}")
    return value


def finite(value: torch.Tensor, name: str) -> torch.Tensor:
    """Raise if ``value`` holds NaN or inf.

    Tested as ``isfinite(value.abs().amax())``: torch's max reductions propagate NaN, so the largest magnitude is
    finite iff every value is; two passes where ``isfinite(...).all()`` makes about five (a twentieth of its time
    on a CPU)."""
    if not is_checked(value):
        _finite_scan(value, name)
    return value


def _finite_scan(value: torch.Tensor, name: str) -> None:
    """:func:`finite`'s pass over the data, once per call (see :func:`checked`)."""
    if value.is_floating_point() and value.numel() and not bool(torch.isfinite(value.abs().amax())):
        raise ValueError(f"{name} contains NaN or inf values")


def same_device(a: torch.Tensor, b: torch.Tensor, name_a: str, name_b: str) -> None:
    """Raise if two tensors live on different devices."""
    if a.device != b.device:
        raise ValueError(f"{name_b} is on {b.device} but {name_a} is on {a.device}; move them to the same device")


def one_device(**named) -> None:
    """Raise before any work if the tensors passed by keyword (``x=x, boxes=boxes``; None and non-tensors are
    skipped) are not all on the device of the first tensor given: a ValueError naming the caller's argument and both
    devices, where torch would fail later with an internals message (``Tensor.item() cannot be called on meta
    tensors``) or not at all (a mix of CPU and CUDA index tensors)."""
    first = None
    for name, value in named.items():
        if not isinstance(value, torch.Tensor):
            continue
        if first is None:
            first = (name, value.device)
        elif value.device != first[1]:
            raise ValueError(f"{name} is on {value.device} but {first[0]} is on {first[1]}; move them to the same "
                             f"device (e.g. {name}.to({first[0]}.device))")


def model_device(model, x: torch.Tensor, name: str = "model", x_name: str = "x") -> None:
    """Raise before any work if ``model`` is a module whose parameters (or buffers) live on another device than
    ``x``: a ValueError naming both. Callables that are not modules, and modules without tensors, pass."""
    if not isinstance(model, torch.nn.Module):
        return
    first = next(model.parameters(), None)
    if first is None:
        first = next(model.buffers(), None)
    if first is not None and first.device != x.device:
        raise ValueError(f"{name} is on {first.device} but {x_name} is on {x.device}; move them to the same device "
                         f"(e.g. {name}.to({x_name}.device))")


def batch_match(a: torch.Tensor, b: torch.Tensor, name_a: str, name_b: str) -> None:
    """Raise if two tensors disagree on the batch dimension."""
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"{name_b} has batch size {b.shape[0]} but {name_a} has {a.shape[0]}")


def eval_mode(model: torch.nn.Module, name: str = "model") -> None:
    """Raise if a model (or any submodule) is in training mode: dropout/batch-norm would make scores random."""
    if not isinstance(model, torch.nn.Module):
        if callable(model):
            return
        raise TypeError(f"{name} must be a torch.nn.Module or a callable, got {type(model).__name__}")
    if any(m.training for m in model.modules()):
        raise ValueError(f"{name} is in training mode; call {name}.eval() before evaluating explanations")


def positive_int(value, name: str) -> int:
    """Check a strictly positive integer."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


BATCH_SIZE_AUTO = "auto"


def batch_size(value, name: str = "batch_size") -> int | str | None:
    """Check a batch size: a positive integer, None (the default size of the model's activations) or ``"auto"``
    (returned as is, resolved later by :mod:`faithlab.perturb.autobatch`)."""
    if value is None:
        return None
    if isinstance(value, str):
        if value != BATCH_SIZE_AUTO:
            raise ValueError(f"{name} must be a positive integer, None or 'auto', got {value!r}")
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, None or 'auto', got {value!r}")
    return int(value)


def number(value, name: str) -> float:
    """Check a real number (int or float, not bool, not NaN) and return it as a float."""
    if isinstance(value, torch.Tensor) and value.numel() == 1 and not value.is_complex() and value.dtype != torch.bool:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    v = float(value)
    if v != v:
        raise ValueError(f"{name} must be a number, got NaN")
    return v


def fraction(value: float, name: str, *, closed_low: bool = True) -> float:
    """Check a number in [0, 1] (or (0, 1] when ``closed_low`` is False)."""
    v = number(value, name)
    low_ok = v >= 0 if closed_low else v > 0
    if not (low_ok and v <= 1):
        interval = "[0, 1]" if closed_low else "(0, 1]"
        raise ValueError(f"{name} must lie in {interval}, got {value!r}")
    return v


def one_of(value, name: str, allowed: Sequence) -> object:
    """Check that ``value`` is one of the ``allowed`` options (compared with ==; unhashable values are refused)."""
    if isinstance(value, (list, dict, set, torch.Tensor)) or value not in allowed:
        raise ValueError(f"{name} must be one of {tuple(allowed)}, got {value!r}")
    return value


def fractions(value, name: str, *, increasing: bool = False) -> torch.Tensor:
    """Check a non-empty 1-D sequence of real numbers in [0, 1] (strictly increasing if ``increasing``); returns it
    as a float64 CPU tensor."""
    if isinstance(value, torch.Tensor):
        if value.is_complex() or value.dtype == torch.bool:
            raise TypeError(f"{name} must hold real numbers, got a tensor of dtype {value.dtype}")
        f = value.detach()
    else:
        if value is None or isinstance(value, (str, bytes, dict, set)) or not hasattr(value, "__len__"):
            raise TypeError(f"{name} must be a 1-D sequence of numbers in [0, 1], got {type(value).__name__}")
        items = [v.item() if isinstance(v, torch.Tensor) and v.numel() == 1 else v for v in value]
        bad = [v for v in items if isinstance(v, bool) or not isinstance(v, numbers.Real)]
        if bad:
            raise TypeError(f"{name} must hold real numbers, got {bad[0]!r} ({type(bad[0]).__name__})")
        f = torch.as_tensor([float(v) for v in items], dtype=torch.float64, device="cpu")
    f = f.to("cpu", torch.float64)  # a list is read in float64 directly: 0.1 stays 0.1, not float32's 0.1000000015
    if f.ndim != 1 or f.numel() == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence of fractions, got shape {tuple(f.shape)}")
    if not bool(torch.isfinite(f).all()) or bool(((f < 0) | (f > 1)).any()):
        raise ValueError(f"{name} must lie in [0, 1], got {f.tolist()}")
    if increasing and bool((f[1:] <= f[:-1]).any()):
        raise ValueError(f"{name} must be strictly increasing, got {f.tolist()}")
    return f


_SEED_RANGE = (-(2**63), 2**64 - 1)  # what torch.Generator.manual_seed accepts


def generator(value, name: str = "generator", *, why: str = "") -> torch.Generator:
    """Return a ``torch.Generator`` from a generator or an int seed (a fresh CPU generator); ``None`` raises."""
    if isinstance(value, torch.Generator):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        if not _SEED_RANGE[0] <= value <= _SEED_RANGE[1]:
            raise ValueError(f"{name} seed must lie in [-2**63, 2**64 - 1], got {value}")
        return torch.Generator().manual_seed(value)
    if value is None:
        raise ValueError(f"{name} is required{' ' + why if why else ''}; pass a torch.Generator or an int seed")
    raise TypeError(f"{name} must be a torch.Generator or an int seed, got {type(value).__name__}")


def model(value, name: str = "model") -> None:
    """Check a model: callable and, for a ``torch.nn.Module``, in eval mode (see :func:`eval_mode`)."""
    if not callable(value):
        raise TypeError(f"{name} must be a torch.nn.Module or a callable returning logits, got {type(value).__name__}")
    eval_mode(value, name)


def model_accepts(value, x: torch.Tensor, name: str = "model", x_name: str = "x") -> None:
    """Raise if ``x`` cannot go through a ``torch.nn.Module`` ``value``: its floating parameters live on another
    device or have another dtype than floating ``x``. Callables without parameters are not checked."""
    if not isinstance(value, torch.nn.Module):
        return
    param = next((p for p in value.parameters() if p.is_floating_point()), None)
    if param is None:
        return
    if param.device != x.device:
        raise ValueError(f"{name} is on {param.device} but {x_name} is on {x.device}; move them to the same device")
    if x.is_floating_point() and x.dtype != param.dtype:
        raise TypeError(f"{x_name} has dtype {x.dtype} but {name}'s parameters are {param.dtype}; convert "
                        f"{x_name} with .to({param.dtype})")


def load_refusal(err: Exception) -> str:
    """Why ``torch.load(weights_only=True)`` refused a file, in a few words that say only what is wrong with it.

    torch's own message is a page of advice that includes retrying without the weights-only restriction, which a
    file from elsewhere must never get, so none of it is repeated: the object the weights-only loader does not
    construct ("it needs X, which is neither a tensor nor a plain container"); a pickle it does not read (a plain
    ``pickle.dump``: it stops at the first instruction it does not follow); a damaged file or one that is no torch
    checkpoint (a broken zip archive, a file that ends early); else the error's first line without the sentences
    that give that advice."""
    raw = _ANSI.sub("", str(err)).strip()
    text = _ENFORCE.sub("", raw)
    needed = _NEEDS.search(text)
    if needed:
        return f"it needs {needed.group(1)}, which is neither a tensor nor a plain container"
    built = _BUILDS.search(text)
    if built:
        return f"it builds {built.group(1)}, which is neither a tensor nor a plain container"
    if isinstance(err, pickle.UnpicklingError):
        return "it is a pickle of objects that a weights-only read does not build (or no torch checkpoint at all)"
    if isinstance(err, (EOFError, KeyError, IndexError, struct.error, UnicodeDecodeError)) or (
            isinstance(err, RuntimeError) and _DAMAGED.search(raw)) or (
            isinstance(err, OSError) and err.errno == errno.EINVAL):  # a seek before the start of a cut zip archive
        first = _first_sentence(text) if isinstance(err, RuntimeError) else ""
        return "the file is damaged or is not a torch checkpoint" + (f" ({first})" if first else "")
    first_line = (text.strip().splitlines() or [""])[0]
    kept = [s for s in re.split(r"(?<=[.!?])\s+", first_line) if s and not _ADVICE.search(s)]
    return (" ".join(kept) or type(err).__name__)[:200]


def _first_sentence(text: str) -> str:
    """The first sentence of ``text``'s first line without its full stop, cut at 160 characters ("" if it gives
    advice)."""
    first = re.split(r"(?<=[.!?])\s+", (text.strip().splitlines() or [""])[0])[0].rstrip(".")
    return "" if _ADVICE.search(first) else first[:160]


# "Unsupported global: GLOBAL numpy.dtype was not ..." (zip checkpoints), "Trying to load unsupported GLOBAL
# posix.system whose module posix is blocked." (legacy ones)
_NEEDS = re.compile(r"[Uu]nsupported (?:global: )?GLOBAL (\S+?)\.?(?:\s|$)")
# "Can only build Tensor, ... but got <class 'x.Y'>", "Can only create new object for nn.Parameter ... but got ..."
_BUILDS = re.compile(r"Can only (?:build|create new object)[^\n]*?but got <class '([^']+)'>")
# PytorchStreamReader (a zip checkpoint's reader) and the legacy format's own checks
_DAMAGED = re.compile(r"PytorchStreamReader|zip archive|inline_container|magic number|corrupt", re.I)
_ENFORCE = re.compile(r"^\[enforce fail at [^\]]*\][\s.]*")  # "[enforce fail at inline_container.cc:179] . "
_ADVICE = re.compile(r"weights.only|\bFalse\b|trust|safe_globals|arbitrary code", re.I)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
