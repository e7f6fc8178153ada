"""What ``import pyburn`` loads: the tensor layer, not nn, optim, train, store or data (those
load on first use, PEP 562), and no backend; each lazy name still works every usual way."""

from __future__ import annotations

import subprocess
import sys

import pytest

import pyburn

LAZY = ("data", "nn", "optim", "store", "train")


def _modules_after(code: str) -> set[str]:
    """The pyburn modules a fresh interpreter holds after running `code`."""
    probe = code + "\nimport sys; print(' '.join(m for m in sys.modules if m.startswith('pyburn')))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, timeout=120)
    return set(done.stdout.split())


def test_import_pyburn_loads_neither_the_subpackages_nor_a_backend():
    loaded = _modules_after("import pyburn")
    assert not {f"pyburn.{name}" for name in LAZY} & loaded
    assert not {m for m in loaded if m.startswith("pyburn.backends.") and
                m != "pyburn.backends.base"}


@pytest.mark.parametrize("code, wanted", [
    ("import pyburn; pyburn.nn.Linear", "pyburn.nn"),
    ("from pyburn import optim", "pyburn.optim"),
    ("import pyburn.train", "pyburn.train"),
    ("import pyburn; pyburn.store.save", "pyburn.store"),
])
def test_a_subpackage_loads_when_named(code, wanted):
    assert wanted in _modules_after(code)


def test_the_lazy_names_are_listed_and_unknown_names_say_so():
    assert set(LAZY) <= set(dir(pyburn)) and set(pyburn.LAZY_SUBPACKAGES) == set(LAZY)
    assert pyburn.nn.Linear.__module__ == "pyburn.nn.linear"
    with pytest.raises(AttributeError, match="module 'pyburn' has no attribute 'nnn'"):
        pyburn.nnn  # noqa: B018
