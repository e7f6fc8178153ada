"""glibc's heap settings for numpy arrays, applied once when the cpu backend is created.

A training step allocates and frees the same few megabyte-sized arrays every step. With
glibc's defaults each of them is fresh memory from the kernel again: a freed block at the
top of the heap is given back once more than the trim threshold lies free there, and the
threshold above which blocks are mapped on their own moves with what was freed last. Every
4 KiB of fresh memory is then a page fault when first written: measured on the MNIST CNN's
training step (batch 64, one thread), 3,300 faults per step, about half of the step's CPU
time. With blocks up to 32 MiB (glibc's own upper bound for the moving threshold) taken
from the heap and up to 64 MiB of free heap kept, the same step makes one or two.

The settings are the process's, not the backend's, so they are left alone where the user
chose their own (glibc reads ``MALLOC_MMAP_THRESHOLD_`` and ``MALLOC_TRIM_THRESHOLD_`` at
start-up) and where the C library is not glibc (``mallopt`` is glibc's).
"""

from __future__ import annotations

import ctypes
import os
import sys

# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3

#: blocks up to this size come from the heap (glibc's largest automatic threshold)
MMAP_THRESHOLD = 32 << 20
#: free memory kept at the top of the heap before any is given back
TRIM_THRESHOLD = 64 << 20

_done = False


def keep_heap() -> None:
    """Set glibc's mmap and trim thresholds (once per process; see the module docstring)."""
    global _done
    if _done:
        return
    _done = True
    if not sys.platform.startswith("linux") or any(
            name in os.environ for name in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")):
        return
    try:
        libc = ctypes.CDLL(None)
        if not hasattr(libc, "gnu_get_libc_version"):  # musl and others have no mallopt
            return
        # both or neither: setting either stops glibc from moving the mmap threshold
        libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
        libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    except (OSError, AttributeError):
        return
