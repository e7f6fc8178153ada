"""pyburn.data with the standard library only, as in Pyodide: the same permutation, batches and
IDX values as with numpy."""

from __future__ import annotations

import json
import struct

from test_no_numpy import run_without_numpy  # tests/ is on sys.path under pytest

import pyburn
from pyburn.data import DataLoader, TensorDataset, permutation
from pyburn.data.datasets import read_idx

CODE = """
    import json, sys
    import pyburn
    from pyburn.data import DataLoader, TensorDataset, permutation
    from pyburn.data.datasets import read_idx

    x = pyburn.arange(20, device="flex").reshape(10, 2)
    loader = DataLoader(TensorDataset(x), batch_size=4, shuffle=True, seed=77, num_workers=2)
    print(json.dumps({
        "permutation": permutation(1000, 5, 2),
        "batches": [[t.tolist() for t in b] for b in loader],
        "idx": read_idx(sys.argv[1]).tensor("flex").tolist(),
        "numpy_loaded": "numpy" in sys.modules,
    }))
"""


def test_data_without_numpy_matches_with_numpy(tmp_path):
    path = tmp_path / "x-idx"
    path.write_bytes(bytes([0, 0, 0x0B, 1, 0, 0, 0, 3]) + struct.pack(">3h", -5, 0, 300))
    result = run_without_numpy(CODE.replace("sys.argv[1]", repr(str(path))))
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["numpy_loaded"] is False
    assert out["permutation"] == permutation(1000, 5, 2)
    x = pyburn.arange(20, device="flex").reshape(10, 2)
    expected = DataLoader(TensorDataset(x), batch_size=4, shuffle=True, seed=77)
    assert out["batches"] == [[t.tolist() for t in b] for b in expected]
    assert out["idx"] == read_idx(path).tensor("flex").tolist() == [-5, 0, 300]
