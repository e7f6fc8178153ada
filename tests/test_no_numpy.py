"""pyburn without numpy, as in Pyodide: the core imports and `flex` computes with the standard
library only, and the numpy device says clearly what is missing.

Each check runs in a fresh interpreter whose imports of numpy fail, because this process has
numpy loaded already.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

# Makes every import of numpy (or a submodule) fail the way it does where numpy is not installed;
# wgpu-py and wasmtime too, which Pyodide does not have either (its GPU path is the browser's
# WebGPU, its wasm device the browser's own WebAssembly engine).
_BLOCK_NUMPY = """\
import sys

class _NoNumpy:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("numpy", "wgpu", "wasmtime"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, _NoNumpy())
"""


def run_without_numpy(code: str) -> subprocess.CompletedProcess[str]:
    """Run `code` in a new Python that cannot import numpy (nor wgpu, nor wasmtime), with the
    default device left to pyburn ($PYBURN_DEVICE unset); its output is captured."""
    script = _BLOCK_NUMPY + textwrap.dedent(code)
    env = {k: v for k, v in os.environ.items() if k != "PYBURN_DEVICE"}
    return subprocess.run([sys.executable, "-c", script], capture_output=True,
                          text=True, timeout=120, env=env)


def test_flex_computes_without_numpy():
    result = run_without_numpy("""
        import json
        import pyburn

        x = pyburn.tensor([[1.0, 2.0], [3.0, 4.0]], device=pyburn.device("flex"))
        y = (x @ x + 0.5).sum(dim=1)
        print(json.dumps({"values": y.tolist(), "dtype": y.dtype.name,
                          "numpy_loaded": "numpy" in sys.modules}))
    """)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    # [[1, 2], [3, 4]] squared is [[7, 10], [15, 22]]; plus 0.5 and summed along rows
    assert out == {"values": [18.0, 38.0], "dtype": "float32", "numpy_loaded": False}


def test_cpu_device_names_numpy_when_missing():
    result = run_without_numpy("""
        import pyburn

        try:
            pyburn.device("cpu")
        except pyburn.DeviceError as exc:
            print(exc)
        else:
            raise SystemExit("pyburn.device('cpu') worked without numpy")
    """)
    assert result.returncode == 0, result.stderr
    assert "numpy" in result.stdout


def test_info_falls_back_to_flex_without_numpy():
    result = run_without_numpy("""
        from pyburn.cli import main

        raise SystemExit(main(["info"]))
    """)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    cpu_line = next(line for line in lines if line.split()[:1] == ["cpu"])
    assert "unavailable" in cpu_line and "numpy" in cpu_line
    assert any(line.startswith("default device: flex") for line in lines)
