"""load_pickle: plain data and numpy arrays come back (arrays as PickledArray, whatever the
protocol); a pickle that names anything else is refused before it runs."""

from __future__ import annotations

import os
import pickle

import numpy as np
import pytest

import pyburn
from pyburn.data.datasets.safe_pickle import PickledArray, load_pickle


def test_plain_data_and_arrays_in_every_protocol():
    array = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    value = {b"a": [1, 2.5, "x", None, True], "t": (b"\x00", {3: [4]}), "array": array,
             "fortran": np.asfortranarray(array[0])}
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        loaded = load_pickle(pickle.dumps(value, protocol=protocol), "p")
        assert loaded[b"a"] == value[b"a"] and loaded["t"] == value["t"], protocol
        got = loaded["array"]
        assert isinstance(got, PickledArray) and got.dtype == "f4" and got.shape == (2, 3, 4)
        assert got.byteorder in "<|=" and not got.fortran
        assert got.data == array.tobytes()
        assert loaded["fortran"].fortran and loaded["fortran"].shape == (3, 4)


def py2_str(data: bytes) -> bytes:
    """SHORT_BINSTRING: how Python 2 pickled a str."""
    return b"U" + bytes([len(data)]) + data


#: {"data": uint8 array (2, 3), "labels": [1, 2]} as Python 2's cPickle wrote CIFAR-10's
#: batches: str keys and array bytes, numpy.core's _reconstruct and the ndarray's state
PY2_BATCH = (
    b"\x80\x02}(" + py2_str(b"data")
    + b"cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\nK\x00\x85" + py2_str(b"b")
    + b"\x87R(K\x01K\x02K\x03\x86cnumpy\ndtype\n" + py2_str(b"u1") + b"K\x00K\x01\x87R(K\x03"
    + py2_str(b"|") + b"NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00tb\x89"
    + py2_str(bytes(range(6))) + b"tb" + py2_str(b"labels") + b"](K\x01K\x02eu.")


def test_a_python_2_pickle_reads_as_numpy_reads_it():
    reference = pickle.loads(PY2_BATCH, encoding="bytes")  # our own bytes: safe to load
    loaded = load_pickle(PY2_BATCH, "py2")
    assert loaded[b"labels"] == reference[b"labels"] == [1, 2]
    array = loaded[b"data"]
    assert (array.dtype, array.byteorder, array.shape) == ("u1", "|", (2, 3))
    assert array.data == reference[b"data"].tobytes()


class Evil:
    """Unpickling this calls os.system, which would make the marker file."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def test_a_pickle_that_would_run_code_is_refused(tmp_path):
    marker = tmp_path / "ran"
    for data in (pickle.dumps(Evil(marker)), pickle.dumps({b"data": [Evil(marker)]}, 2)):
        with pytest.raises(pyburn.FormatError, match=r"evil: the pickle names posix\.system.*"
                                                     "refused"):
            load_pickle(data, "evil")
    assert not marker.exists()
    with pytest.raises(pyburn.FormatError, match="builtins.eval"):
        load_pickle(pickle.dumps(eval), "evil")
    # an allowed name called with arguments that would reach further is refused too
    codec = pickle.dumps(b"x", 0).replace(b"latin1", b"zlib_c")
    with pytest.raises(pyburn.FormatError, match="encodes bytes as 'zlib_c'"):
        load_pickle(codec, "evil")


def test_broken_pickles_are_format_errors():
    data = pickle.dumps({"a": list(range(10))})
    with pytest.raises(pyburn.FormatError, match="cut: not a readable pickle"):
        load_pickle(data[:-5], "cut")
    with pytest.raises(pyburn.FormatError, match="objects, not plain numbers"):
        load_pickle(pickle.dumps(np.array([None, 1], dtype=object), 2), "objects")
