"""ONNX models in pyburn: run them, turn them into Python code, and export modules.

>>> import os, tempfile, pyburn, pyburn.onnx
>>> path = os.path.join(tempfile.mkdtemp(), "model.onnx")
>>> x = pyburn.ones(1, 4, device="flex")
>>> pyburn.onnx.export(pyburn.nn.Linear(4, 2, device="flex"), x, path)
>>> model = pyburn.onnx.load(path, device="flex")  # any .onnx file loads the same way
>>> model(x).shape
(1, 2)

Everything here is pure Python (the protobuf reader included), so it works under Pyodide.
docs/onnx.md lists the supported operators and what each part does.
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

from . import ir

if TYPE_CHECKING:
    from .passes import UnsupportedOperatorError
    from .runner import OnnxModule, OperatorError

#: names imported on first use, so that `import pyburn.onnx` (the ``pyburn`` command line
#: imports it) does not load the runner: name -> module
_LAZY = {"UnsupportedOperatorError": ".passes", "OnnxModule": ".runner",
         "OperatorError": ".runner", "read": ".proto"}

Source = str | os.PathLike[str] | bytes | bytearray | memoryview | ir.Model


def convert(source: Source, out_dir: str | os.PathLike[str], *, class_name: str = "Model",
            name: str | None = None) -> tuple[str, str]:
    """Write the model in `source` as readable pyburn Python (``<name>.py``, a Module
    subclass) plus its weights (``<name>.safetensors``) into `out_dir`; returns both paths.
    The command line's ``pyburn onnx convert``."""
    from .codegen import convert as write  # import time: the code generator loads on first use

    return write(source, out_dir, class_name=class_name, name=name)


def export(module: Any, example_inputs: Any, path: str | os.PathLike[str],
           **options: Any) -> None:
    """Write `module` as an ONNX model to `path`, traced on `example_inputs`; the options
    and the whole story are `pyburn.onnx.exporter.export`'s."""
    # import time: the exporter loads on first use (a page's wheel may leave it out)
    from .exporter import export as write

    write(module, example_inputs, path, **options)


def load(source: Source, device: Any = None, *, fuse: bool = True) -> OnnxModule:
    """The ONNX model in `source` as a Module that runs it on `device` (the default device
    when None). With `fuse`, each Conv runs as one step with the BatchNormalization and
    activation after it (`pyburn.onnx.fusion`); False runs every node as the file has it.
    Raises `UnsupportedOperatorError` listing every operator pyburn lacks before anything
    runs, and `pyburn.FormatError` for a malformed file."""
    # import time: the reader and the runner load on first use
    from .proto import read
    from .runner import OnnxModule

    return OnnxModule(read(source), device, fuse)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["OnnxModule", "OperatorError", "UnsupportedOperatorError", "convert", "export", "ir",
           "load", "read"]
