"""The peers pyburn is measured against: optional imports that may be missing.

numpy and PyTorch are not pyburn dependencies (Pyodide has neither). A missing peer is a
fact to report ("not installed"), never a reason to crash: `load` gives None, and the row
that wanted the peer shows its own number without a ratio.
"""

from __future__ import annotations

import importlib
from types import ModuleType

#: the package each peer is imported from
PEERS = ("numpy", "torch")

_loaded: dict[str, ModuleType | None] = {}


def load(name: str) -> ModuleType | None:
    """The peer module `name` ("numpy" or "torch"), or None if it does not import here.

    >>> load("numpy") is None or load("numpy").__name__ == "numpy"
    True
    """
    if name not in _loaded:
        try:
            _loaded[name] = importlib.import_module(name)
        except ImportError:
            _loaded[name] = None
    return _loaded[name]


def label(name: str) -> str:
    """The peer with its version ("numpy 2.4.6"), or just its name when it is missing."""
    module = load(name)
    return name if module is None else f"{name} {module.__version__}"


def versions() -> dict[str, str]:
    """Every peer's version, or "not installed"."""
    return {name: (module.__version__ if (module := load(name)) else "not installed")
            for name in PEERS}
