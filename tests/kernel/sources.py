"""Kernels written as text, for the tests: each source becomes a module of its own on disk
(the front end reads a kernel's source from its file, as for any kernel)."""

from __future__ import annotations

import importlib.util
import itertools
import tempfile
import textwrap
from pathlib import Path

import pyburn.kernel as K

_DIRECTORY = Path(tempfile.mkdtemp(prefix="pyburn-kernels-"))
_NAMES = itertools.count()
HEADER = "import pyburn.kernel as K\nfrom pyburn.kernel import *\n\n"


def load(source: str, name: str = "k") -> K.KernelFunction:
    """The kernel `name` defined by `source` (a module body, after `HEADER`; a plain
    function is made a kernel)."""
    path = _DIRECTORY / f"kernel_{next(_NAMES)}.py"
    path.write_text(HEADER + textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    found = getattr(module, name)
    return found if isinstance(found, K.KernelFunction) else K.kernel(found)
