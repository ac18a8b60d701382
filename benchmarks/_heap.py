"""The host heap the benchmarks time on (``--allocator``, :mod:`_timing`): glibc's ``malloc`` made to keep freed
memory for reuse. No torch here, so a test can check it in a fresh interpreter in a fraction of a second."""

from __future__ import annotations

import ctypes

M_TRIM_THRESHOLD, M_MMAP_MAX = -1, -4  # malloc.h
TRIM_NEVER = 2**31 - 1  # the largest int mallopt takes: a heap top this large is never given back


def steady_allocator() -> bool:
    """Make glibc's malloc keep freed memory for reuse: no mmap for large blocks (M_MMAP_MAX = 0) and no trimming of
    the heap (M_TRIM_THRESHOLD = 2^31 − 1), through ``mallopt`` (mallopt(3)). Returns whether it applied (False where
    the C library is not glibc).

    With glibc's defaults a block above the mmap threshold (at most 32 MiB) is mapped on allocation and unmapped on
    free, and the heap is trimmed back to the system, so a buffer that is allocated and freed every forward pass
    (the small CNN's 33.5 MB first activation at batch 256) is faulted in page by page on every pass: 1.2 M minor
    page faults and 2.4 s of system time per bare run of μF's 25,728 inputs, against 2.9 s of user time. How much of
    it a run pays depends on where the process's earlier buffers landed, so the same bare passes took 2.9 s in one
    process and 5.3 s in another, and a metric's ratio to them moved by ±0.2 between processes. A GPU's caching
    allocator never returns its blocks; this gives both sides of every comparison the same steady heap."""
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_MMAP_MAX, 0)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_NEVER))
