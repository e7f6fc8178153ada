"""Device kinds come from the backends' own registrations: every module of pyburn/backends/
with a ``REGISTRATION`` is a kind, ranked by it for the default device, and a new backend
module is a new kind with nothing else edited (shown with one written into a temporary
folder on the backends package's path)."""

from __future__ import annotations

import sys
import textwrap

import pytest

import pyburn
from pyburn import backends
from pyburn.backends.base import Registration
from pyburn.devices import _devices, device_report, registrations
from pyburn.errors import DeviceError

FAKE_BACKEND = '''
"""A backend that borrows flex's arithmetic, ranked before every other."""
from pyburn.backends.base import Registration
from pyburn.devices import _devices, device_report, registrations
from pyburn.backends.flex import FlexBackend

class Borrowed(FlexBackend):
    name = "borrowed"

REGISTRATION = Registration("borrowed", lambda: None, lambda index: Borrowed(), rank=1)
'''


def test_the_shipped_kinds_register_themselves_under_their_module_names():
    found = registrations()
    assert set(found) == {"flex", "cpu", "wgpu", "wgpu_nofusion", "wasm", "remote"}
    assert all(isinstance(r, Registration) and r.name == name for name, r in found.items())
    assert found["wgpu_nofusion"].rank is None  # chosen by name only
    assert found["remote"].rank is None and found["remote"].connect is not None  # by address


def test_the_report_is_ranked_and_leaves_out_kinds_chosen_by_name():
    kinds = [kind for kind, _ in device_report()]
    assert "wgpu_nofusion" not in kinds and set(kinds) == {"flex", "cpu", "wasm", "wgpu"}
    places = [registrations()[k].place() for k in kinds]
    assert places == sorted(places) and kinds[-1] == "flex"


def test_an_unknown_kind_names_the_known_ones():
    known = r"unknown device kind 'tpu'; known: cpu, flex, wasm, wgpu$"
    with pytest.raises(DeviceError, match=known):
        pyburn.device("tpu")
    with pytest.raises(DeviceError, match="unknown device kind 'base'"):
        pyburn.device("base")  # a module of the package, but no backend


@pytest.fixture
def extra_backend(tmp_path, monkeypatch):
    """pyburn/backends/ with one more module, `borrowed.py`, in a folder of its own."""
    (tmp_path / "borrowed.py").write_text(textwrap.dedent(FAKE_BACKEND))
    monkeypatch.setattr(backends, "__path__", [*backends.__path__, str(tmp_path)])
    registrations.cache_clear()
    yield
    registrations.cache_clear()
    sys.modules.pop("pyburn.backends.borrowed", None)
    for key in [k for k in _devices if k[0] == "borrowed"]:
        del _devices[key]


def test_a_new_backend_module_is_a_new_kind_with_nothing_else_edited(extra_backend):
    assert device_report()[0] == ("borrowed", None)  # rank 1: first
    x = pyburn.tensor([1.0, 2.0], device="borrowed")
    assert x.device.backend.name == "borrowed" and (x * 3).tolist() == [3.0, 6.0]
    assert [d.name for d in pyburn.available_devices()][0] == "borrowed"
