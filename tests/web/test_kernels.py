"""Recording the GPU kernels of a page's first work for a web build (pyburn/web/kernels.py):
the kernels a piece of work compiles on this machine's wgpu device, in order, and the
manifest entries that go with them. (e2e/test_mnist.py checks in Chromium that the recorded
kernels are exactly the ones the page's first prediction needs.)

Skipped when the run skips wgpu on purpose (PYBURN_SKIP=wgpu)."""

from __future__ import annotations

import json

import pytest

import pyburn
from pyburn.backends import wgpu
from pyburn.backends.wgpu.browser import REQUEST
from pyburn.errors import WebBuildError
from pyburn.web import kernels

REASON = wgpu.unavailable_reason()
if REASON:  # skipped on purpose: tests/conftest.py stops a run that lacks wgpu otherwise
    pytest.skip(REASON, allow_module_level=True)


def work(scale: float) -> None:
    """A small piece of GPU work whose kernels depend on nothing but its shapes."""
    x = pyburn.arange(37, dtype="float32", device="wgpu").reshape(1, 37)
    (x.exp() * scale).sum(dim=1).tolist()


def test_the_kernels_a_piece_of_work_compiles_are_recorded_once_in_order():
    runtime = pyburn.device("wgpu").backend.runtime
    before = runtime.kernels()
    recorded = kernels.record(lambda: work(2.0))
    assert [(source, entry) for entry, source in recorded] == runtime.kernels()[len(before):]
    assert recorded and all(entry in source for entry, source in recorded)
    # compiled already: nothing new, whatever the values
    assert kernels.record(lambda: work(3.0)) == []


def test_the_manifest_names_the_device_request_and_the_kernels(tmp_path):
    entries = kernels.write(tmp_path, [("main", "@compute fn main() {}")])
    assert entries == {"webgpu": REQUEST, "kernels": kernels.KERNELS}
    assert json.loads((tmp_path / kernels.KERNELS).read_text()) == [
        ["main", "@compute fn main() {}"]]
    assert kernels.write(tmp_path / "none", []) == {"webgpu": REQUEST}


def test_without_a_wgpu_device_recording_says_why(monkeypatch):
    monkeypatch.setattr(wgpu, "unavailable_reason", lambda: "no adapter here")
    with pytest.raises(WebBuildError, match="no adapter here"):
        kernels.record(lambda: work(1.0))
