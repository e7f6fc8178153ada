"""Reading pickles of plain data and numpy arrays without running code from the file.

A pickle can name any importable function and have it called while loading: a downloaded
pickle is a program. `load_pickle` allows only what datasets such as CIFAR-10's hold: plain
values (dicts, lists, tuples, bytes, strings, numbers), and numpy arrays, which are not
rebuilt by numpy but kept as `PickledArray` (shape, dtype and raw bytes): numpy need not be
installed, and none of its code runs on the file's data. Any other name raises `FormatError`
before anything is called.
"""

from __future__ import annotations

import io
import pickle
from typing import Any

from ...errors import FormatError


class PickledArray:
    """A numpy array as a pickle holds it: `dtype` (numpy's type code, such as "u1" or "f4"),
    `byteorder` ("|" where it does not matter, "<" or ">"), `shape`, `fortran` (whether the
    bytes are in column-major order) and `data`, the raw element bytes."""

    def __init__(self) -> None:
        self.dtype = ""
        self.byteorder = "|"
        self.shape: tuple[int, ...] = ()
        self.fortran = False
        self.data = b""

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        """numpy's array state, which the pickle's BUILD hands over: (version, shape, dtype,
        fortran, data), the version left out by old numpy."""
        shape, dtype, fortran, data = state[1:] if len(state) == 5 else state
        if not isinstance(dtype, _DType) or not isinstance(data, (bytes, bytearray)):
            raise FormatError("the pickled array holds objects, not plain numbers")
        self.dtype, self.byteorder = dtype.code, dtype.byteorder
        self.shape, self.fortran, self.data = tuple(shape), bool(fortran), bytes(data)

    def __repr__(self) -> str:
        return f"PickledArray({self.byteorder}{self.dtype}, shape={self.shape})"


class _DType:
    """Stands in for ``numpy.dtype`` while loading: keeps the type code and byte order."""

    def __init__(self, code: str | bytes, align: bool = False, copy: bool = True):
        self.code = code.decode("ascii") if isinstance(code, bytes) else str(code)
        self.byteorder = "|"

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        order = state[1]
        self.byteorder = order.decode("ascii") if isinstance(order, bytes) else str(order)


def _reconstruct(kind: Any, shape: Any, code: Any) -> PickledArray:
    """``numpy.core.multiarray._reconstruct``: an empty array that BUILD then fills."""
    return PickledArray()


def _frombuffer(buffer: Any, dtype: _DType, shape: Any, order: str) -> PickledArray:
    """``numpy.core.numeric._frombuffer``, which pickle protocol 5 calls with the bytes."""
    array = PickledArray()
    array.__setstate__((tuple(shape), dtype, order == "F", bytes(buffer)))
    return array


def _latin1(text: str, encoding: str) -> bytes:
    """``_codecs.encode``, by which protocols 0 to 2 store bytes; latin-1 only."""
    if encoding not in ("latin1", "latin-1"):
        raise FormatError(f"the pickle encodes bytes as {encoding!r}, not latin-1")
    return text.encode("latin-1")


#: every name a pickle may use, and what stands in for it
_ALLOWED: dict[tuple[str, str], Any] = {
    **{(f"{numpy_core}.multiarray", "_reconstruct"): _reconstruct
       for numpy_core in ("numpy.core", "numpy._core")},
    **{(f"{numpy_core}.numeric", "_frombuffer"): _frombuffer
       for numpy_core in ("numpy.core", "numpy._core")},
    ("numpy", "ndarray"): PickledArray,
    ("numpy", "dtype"): _DType,
    ("_codecs", "encode"): _latin1,
}


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        allowed = _ALLOWED.get((module, name))
        if allowed is None:
            raise FormatError(f"the pickle names {module}.{name}, which is not plain data; "
                              "refused, since loading it could run code")
        return allowed


def load_pickle(data: bytes, source: str) -> Any:
    """The plain data in the pickle `data` (numpy arrays as `PickledArray`); `FormatError`,
    naming `source`, for anything else or a pickle that is not whole."""
    try:
        # "bytes": the str of a Python 2 pickle (CIFAR-10's) is read as bytes, as it was
        return _Unpickler(io.BytesIO(data), encoding="bytes").load()
    except FormatError as error:
        raise FormatError(f"{source}: {error}") from None
    except Exception as error:  # a corrupt pickle fails in many ways: each is a bad file
        raise FormatError(f"{source}: not a readable pickle ({type(error).__name__}: "
                          f"{error})") from None
