"""A host-synchronisation detector for the tests (issues 52 and 71): :func:`count_syncs` counts, while active, every
operation on a tensor that makes the host wait for the device, by the line of ``lib/faithlab`` that asked for it.

On a GPU the host reads a device value only after every kernel queued before it has run, and a blocking copy between
the host and the device waits for the device's stream: one such operation per forward chunk stalls the device once
per chunk. On the CPU nothing stalls, so the detector is a seam: a :class:`torch.overrides.TorchFunctionMode` that
sees each Tensor method and torch function called from Python and counts those that would synchronise on a GPU,
plus ``torch.cuda.synchronize``, patched for the duration:

- reads of a value on the host (:data:`READS`: ``.item()``, ``.tolist()``, ``.numpy()``, ``.cpu()``, ``bool``,
  ``int``, ``float``, ``complex`` or an index taken from a tensor, an f-string or ``repr`` of one,
  ``torch.equal``, ``torch.allclose``);
- operations whose output size depends on the data (:data:`SHAPES`, ``torch.where(condition)``,
  ``repeat_interleave`` without ``output_size``, a boolean-mask index read ``t[mask]`` or write of a tensor
  ``t[mask] = values``);
- copies between the host and the device (``.to``, ``copy_``, a tensor made from host data with a ``device=``, a
  host-side index tensor or value tensor used to index a device tensor), unless ``non_blocking=True``.

Which tensors live on the host: on a GPU run, those whose ``device`` is the CPU. On a CPU-only run every tensor is on
the CPU, so the seam tells the two sides apart as a GPU run would. Made in the block: a tensor made by a factory
without ``device=`` or with ``device`` spelled ``"cpu"`` (the library's convention for a host tensor made on purpose:
draws from a CPU generator, host-side indices), a ``.cpu()`` or ``.to("cpu")`` of one and any tensor computed from
host tensors only is on the host; a tensor made with a ``device=`` given as a ``torch.device`` (``x.device``: it names
the data's device, whatever it says here) and anything computed from a device tensor is on the device. Made before
the block: the tensors named in :func:`count_syncs`'s ``device`` (the caller's inputs and models) are on the device,
the others on the host (a library's cache); without ``device``, all are on the device. A tensor made where the mode
does not see it (``torch.from_numpy``) counts as made before the block. So ``.to(x.device)`` of a host tensor counts
as a host-to-device copy, ``.to("cpu")`` of a device tensor as a device-to-host copy, and reading a host tensor's
value (``.tolist()`` of host indices) counts as nothing: it syncs on no machine.

Checked on torch 2.15 with a one-line experiment per operation: the mode sees every dunder counted here (``__bool__``
of ``if t:``, ``__index__`` of ``range(t)`` and of a list index, ``__format__`` of an f-string, ``__repr__`` of
``str(t)``, ``__array__`` of ``numpy.asarray``), so none is patched on ``torch.Tensor``. Calls made inside a torch
function (a hook run by a functional call, the internals of ``F.interpolate``) run with the mode popped and are not
seen; a tensor's ``__len__`` and ``__hash__`` read no value and are not counted.

Where CUDA exists the detector also turns on ``torch.cuda.set_sync_debug_mode("warn")`` and counts each of its
warnings (op ``"cuda sync"``) at the faithlab line that made it: the device's own account, which also sees what the
seam cannot (a synchronising kernel, a copy made inside a torch function). Both counts are kept side by side in one
counter; a test compares totals between two runs, so an operation counted twice is counted twice in both.
"""

from __future__ import annotations

import collections
import contextlib
import sys
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path

import torch
import torch.utils._device as torch_device
from torch.overrides import TorchFunctionMode
from torch.utils.weak import WeakIdKeyDictionary

import faithlab

LIB = str(Path(faithlab.__file__).resolve().parent) + "/"
TORCH = str(Path(torch.__file__).resolve().parent) + "/"
HERE = str(Path(__file__).resolve())
_PLUMBING = ("/contextlib.py", "/warnings.py")  # frames of the standard library between an operation and its caller

READS = frozenset({"item", "tolist", "numpy", "__array__", "cpu", "__bool__", "__int__", "__float__", "__complex__",
                   "__index__", "__format__", "__repr__", "equal", "allclose", "is_nonzero"})
"""Operations that read a tensor's value on the host (names as ``func.__name__`` gives them)."""

SHAPES = frozenset({"nonzero", "argwhere", "unique", "unique_consecutive", "masked_select", "bincount", "histc"})
"""Operations whose output size depends on the data (or that read an extremum to size it): on a GPU the host waits
for the size (see also :func:`_data_dependent`)."""

FACTORIES = frozenset(torch_device._device_constructors())
"""The torch functions that make a tensor from nothing or from host data (``torch.zeros``, ``torch.tensor``, ...):
on the host unless given a ``device``."""

FROM_DATA = frozenset({"tensor", "as_tensor", "asarray", "new_tensor"})
"""Factories that copy their data argument (Python numbers, or a tensor) to their ``device``."""

CUDA_SYNC = "synchronizing CUDA operation"
"""The text of the warnings ``torch.cuda.set_sync_debug_mode("warn")`` gives."""


class Syncs:
    """The host synchronisations seen by one :func:`count_syncs` block: ``where`` counts them by ``(site, op)``,
    ``site`` the ``lib/faithlab`` line (relative to the package) that asked for it, followed by ``(from <file:line>)``
    when the operation itself ran in a file outside the package and torch (a test's model, say)."""

    def __init__(self) -> None:
        self.where: collections.Counter = collections.Counter()

    @property
    def total(self) -> int:
        return sum(self.where.values())

    def more_than(self, other: "Syncs") -> dict:
        """The ``(site, op)`` whose count differs from ``other``'s, with the difference (this count minus its)."""
        keys = set(self.where) | set(other.where)
        return {k: self.where[k] - other.where[k] for k in sorted(keys) if self.where[k] != other.where[k]}

    def add(self, op: str, frame) -> None:
        self.where[(_site(frame), op)] += 1


def _site(frame) -> str:
    """The faithlab line of the Python stack at ``frame`` (innermost first), and the line outside faithlab and torch
    that ran the operation when it is not that one."""
    origin = None
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith(LIB):
            here = f"{name[len(LIB):]}:{frame.f_lineno}"
            return here if origin is None else f"{here} (from {origin})"
        if origin is None and not name.startswith(TORCH) and name != HERE and not name.endswith(_PLUMBING):
            origin = f"{name}:{frame.f_lineno}"
        frame = frame.f_back
    return f"outside faithlab ({origin})"


def _tensors(values: Iterable) -> Iterator[torch.Tensor]:
    """The tensors among ``values`` and in the lists and tuples among them (``torch.cat``'s argument)."""
    for v in values:
        if isinstance(v, torch.Tensor):
            yield v
        elif isinstance(v, (list, tuple)):
            yield from (u for u in v if isinstance(u, torch.Tensor))


def _data_dependent(name: str, args: tuple, kwargs: dict) -> bool:
    if name in SHAPES:
        return True
    if name == "where":  # torch.where(condition): the indices of the true elements
        return len(args) + len(kwargs) == 1
    if name == "repeat_interleave":  # torch.repeat_interleave(repeats), or a tensor of repeats: the total is read
        repeats = args[1] if len(args) > 1 else kwargs.get("repeats")
        return kwargs.get("output_size") is None and (repeats is None or isinstance(repeats, torch.Tensor))
    if name == "__getitem__":
        return len(args) >= 2 and _boolean_index(args[1])
    if name == "__setitem__":
        return len(args) >= 3 and _boolean_index(args[1]) and isinstance(args[2], torch.Tensor) and args[2].ndim > 0
    return False


def _index_parts(index) -> tuple:
    return index if isinstance(index, tuple) else (index,)


def _boolean_index(index) -> bool:
    return any(isinstance(p, torch.Tensor) and p.dtype in (torch.bool, torch.uint8) for p in _index_parts(index))


class _Seam(TorchFunctionMode):
    """The CPU seam of :func:`count_syncs` (see the module's doc). On a CPU-only run ``side`` says which tensors are
    on the host: those made in the block, by the rules above, and those named in ``device`` (on the device); on a GPU
    run a tensor's own device says."""

    def __init__(self, syncs: Syncs, device: Iterable | None) -> None:
        super().__init__()
        self.syncs = syncs
        self.real = torch.cuda.is_available()
        self.side = WeakIdKeyDictionary()  # tensor → on the host (a CPU-only run)
        self.before = device is not None  # the side of a tensor made before the block and not in ``device``
        for item in device or ():
            for t in item.parameters() if isinstance(item, torch.nn.Module) else (item,):
                self.side[t] = False
            if isinstance(item, torch.nn.Module):
                for t in item.buffers():
                    self.side[t] = False

    def on_host(self, t: torch.Tensor) -> bool:
        if self.real:
            return t.device.type == "cpu"
        return self.side[t] if t in self.side else self.before

    def host_device(self, device) -> bool:
        """Whether a ``device=`` names the host: spelled ``"cpu"`` (a ``torch.device`` names the data's device on a
        CPU-only run; its own type on a GPU run)."""
        if self.real:
            return torch.device(device).type == "cpu"
        return isinstance(device, str) and device.split(":")[0] == "cpu"

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        tensors = list(_tensors((*args, *kwargs.values())))
        all_host = bool(tensors) and all(self.on_host(t) for t in tensors)
        op, lands = self.sync(func, name, args, kwargs, all_host)
        if op is not None:
            self.syncs.add(op, sys._getframe(1))
        out = func(*args, **kwargs)
        if not self.real:
            for t in _tensors(out if isinstance(out, (list, tuple)) else (out,)):
                self.side[t] = lands if lands is not None else all_host
        return out

    def sync(self, func, name: str, args: tuple, kwargs: dict, all_host: bool) -> tuple[str | None, bool | None]:
        """The operation's name if it syncs (None: it does not) and whether its output lands on the host (None: on
        the host iff all its tensor inputs are)."""
        device = kwargs.get("device")
        lands = None if device is None else self.host_device(device)
        if name in READS or _data_dependent(name, args, kwargs):
            return (None if all_host else name), (True if name == "cpu" else lands)
        if name == "to" and args and isinstance(args[0], torch.Tensor):
            rest = args[1:]
            other = next((a for a in rest if isinstance(a, torch.Tensor)), None)
            device = device if device is not None else next((a for a in rest if isinstance(a, (str, torch.device))),
                                                            None)
            lands = self.on_host(other) if other is not None else None if device is None else self.host_device(device)
            try:
                blocking = not torch._C._nn._parse_to(*rest, **{k: v for k, v in kwargs.items() if k != "copy"})[2]
            except (TypeError, RuntimeError):
                blocking = True
            if not blocking or lands is None or lands == self.on_host(args[0]):
                return None, lands
            return ("to" if lands else "to (host to device)"), lands
        if name == "copy_" and len(args) >= 2 and all(isinstance(a, torch.Tensor) for a in args[:2]):
            into, source = self.on_host(args[0]), self.on_host(args[1])
            blocking = not (kwargs.get("non_blocking") or len(args) > 2 and args[2] is True)
            return (None if into == source or not blocking else "copy_" if into else "copy_ (host to device)"), into
        if name in FROM_DATA and (func in FACTORIES or name == "new_tensor"):
            data = args[1] if name == "new_tensor" else (args[0] if args else kwargs.get("data"))
            source = self.on_host(data) if isinstance(data, torch.Tensor) else True  # Python data: host memory
            if lands is None:
                lands = (self.on_host(args[0]) if name == "new_tensor" else source)
            return (f"{name} (host to device)" if source and not lands else None), lands
        if func in FACTORIES:
            return None, True if lands is None else lands
        if name in ("__getitem__", "__setitem__") and len(args) >= 2 and isinstance(args[0], torch.Tensor) and (
                not self.on_host(args[0])):
            moved = [p for p in _index_parts(args[1]) if isinstance(p, torch.Tensor) and p.ndim > 0
                     and self.on_host(p)]
            if name == "__setitem__" and isinstance(args[2], torch.Tensor) and args[2].ndim > 0 and self.on_host(
                    args[2]):
                moved.append(args[2])
            return (f"{name} (host to device)" if moved else None), lands
        return None, lands


@contextlib.contextmanager
def count_syncs(device: Iterable | None = None) -> Iterator[Syncs]:
    """``with count_syncs() as syncs: ...``: the host synchronisations the block makes (:class:`Syncs`), by
    faithlab line and operation.

    device (read on a CPU-only run): the tensors and modules (their parameters and buffers) a GPU run would hold on
    the device, i.e. the caller's inputs and models; every other tensor made before the block is then taken to be on
    the host (a library's cache of host tensors, made in an earlier block). None: every tensor made before the block
    is taken to be on the device (reading one counts).

    Nothing else changes: every operation runs as it would; ``torch.cuda.synchronize`` is counted, then called (not
    without CUDA); on a machine with CUDA the sync debug mode is "warn" for the block, its warnings are counted
    instead of shown and the mode is restored on exit. The other warnings shown in the block are passed on after
    it, unchanged."""
    syncs = Syncs()
    synchronize = torch.cuda.synchronize
    cuda = torch.cuda.is_available()

    def counted_synchronize(*args, **kwargs):
        syncs.add("torch.cuda.synchronize", sys._getframe(1))
        if cuda:
            synchronize(*args, **kwargs)

    others: list[warnings.WarningMessage] = []
    with contextlib.ExitStack() as stack:
        if cuda:
            stack.enter_context(warnings.catch_warnings())
            warnings.filterwarnings("always", message=f".*{CUDA_SYNC}", category=UserWarning)

            def show(message, category, filename, lineno, file=None, line=None):
                if CUDA_SYNC in str(message):
                    syncs.add("cuda sync", sys._getframe(1))
                else:
                    others.append(warnings.WarningMessage(message, category, filename, lineno, file, line))

            warnings.showwarning = show
            stack.callback(torch.cuda.set_sync_debug_mode, torch.cuda.get_sync_debug_mode())
            torch.cuda.set_sync_debug_mode("warn")
        torch.cuda.synchronize = counted_synchronize
        stack.callback(setattr, torch.cuda, "synchronize", synchronize)
        stack.enter_context(_Seam(syncs, device))
        yield syncs
    for w in others:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
