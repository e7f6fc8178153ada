"""Shared by every test directory: any test that takes a `device` argument runs once per
device of ``pyburn.available_devices()``, with the device's name as the first part of its id.

Where wgpu is available, the suites that check every primitive (conformance, autodiff,
nn/functional) also run on ``wgpu_nofusion``, the wgpu backend with fusion off, so both
forms of the GPU backend are held to the same references.

wgpu is part of every run: without an adapter (a GPU, or Mesa's CPU driver) the run stops at
once, unless ``PYBURN_SKIP=wgpu`` says to run without it. So a wgpu test that finds no adapter
was skipped on purpose (or runs inside Pyodide under Node, which has no WebGPU).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

#: the parts of the run $PYBURN_SKIP turns off on purpose (``make test`` reads it too)
SKIPPED = set(os.environ.get("PYBURN_SKIP", "").replace(",", " ").split())
if "wgpu" in SKIPPED:  # before pyburn looks for adapters: the whole run sees none
    os.environ["PYBURN_WGPU"] = "0"

import table_coverage  # noqa: E402
from conformance.helpers import GOLDEN  # noqa: E402
from device_labels import label  # noqa: E402

import pyburn  # noqa: E402
from pyburn import _tensor as tensor_layer  # noqa: E402
from pyburn.backends import remote, wgpu  # noqa: E402
from pyburn.remote.process import ServerProcess  # noqa: E402
from pyburn.runtime import IN_BROWSER  # noqa: E402

#: the devices every device-parametrized test runs on: those available here, and those
#: $PYBURN_EXTRA_DEVICES names (a device not in the default order yet, such as "wasm" while
#: it is being built: ``PYBURN_EXTRA_DEVICES=wasm pytest tests/conformance``)
DEVICES = pyburn.available_devices() + [
    pyburn.device(name) for name in os.environ.get("PYBURN_EXTRA_DEVICES", "").split(",")
    if name]
NOFUSION = ([pyburn.device("wgpu_nofusion")]
            if wgpu.unavailable_reason() is None and wgpu.fusion_enabled() else [])


#: the `pyburn serve` subprocesses (on cpu, and on wgpu where it runs) behind the remote
#: devices those suites also run on, started when a test first needs them and stopped at the
#: end (one of each per xdist worker)
_SERVERS: list[ServerProcess] = []


def _remote_devices() -> list[pyburn.Device]:
    # no websockets, or in a browser (which cannot start a server)
    if remote.REGISTRATION.unavailable_reason() is not None or IN_BROWSER:
        return []
    if not _SERVERS:
        served = ["cpu"] + (["wgpu"] if wgpu.unavailable_reason() is None else [])
        _SERVERS.extend(ServerProcess(name).__enter__() for name in served)
    return [pyburn.device(server.address) for server in _SERVERS]


def _devices_for(path: Path) -> list[pyburn.Device]:
    """The suites that check every primitive (`table_coverage.SUITES`) run on the unfused
    wgpu backend and a remote device as well."""
    every = table_coverage.recorded_suite(path, Path(__file__).parent) is not None
    return DEVICES + NOFUSION + _remote_devices() if every else DEVICES


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop the remote device's server."""
    for server in _SERVERS:
        server.stop()


def pytest_configure(config: pytest.Config) -> None:
    """Stop before collecting where wgpu cannot run and the user did not skip it; under
    pytest-xdist, gather the workers' notes of what ran (`_WorkerNotes`)."""
    if config.pluginmanager.hasplugin("xdist") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_WorkerNotes())
    reason = wgpu.unavailable_reason()
    if reason and "wgpu" not in SKIPPED:
        raise pytest.UsageError(f"the wgpu tests cannot run: {reason}. Install what it names "
                                "(make system-deps), or set PYBURN_SKIP=wgpu to run without them.")


@pytest.fixture(scope="session")
def mnist() -> Callable[[bool, int], tuple[Any, Any]]:
    """Real MNIST as numpy arrays: ``mnist(train, n)`` gives the first `n` images of the
    split, float32 (n, 28, 28) in [0, 1], and their int32 labels (fetched on first use)."""
    from pyburn.data.datasets import MNIST  # desktop tests only: Pyodide's suite never asks

    def load(train: bool, n: int) -> tuple[Any, Any]:
        images, labels = MNIST(train=train, device="cpu").tensors()
        return (images[:n].float() / 255).numpy(), labels[:n].numpy()
    return load


@pytest.hookimpl(tryfirst=True)
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize `device` first, so that a test id starts with the device name."""
    if "device" in metafunc.fixturenames:
        devices = _devices_for(Path(str(metafunc.definition.path)))
        metafunc.parametrize("device", devices, ids=[label(d) for d in devices])


# ---- the guard that every op-table entry runs on every device (tests/table_coverage.py) ----
TESTS = Path(__file__).parent
RECORDER = table_coverage.Recorder()


@pytest.fixture(autouse=True)
def _record_primitives(request: pytest.FixtureRequest) -> Iterator[None]:
    """Within the suites that check every primitive, note each primitive a test runs."""
    recording = table_coverage.recorded_suite(Path(str(request.node.path)), TESTS) is not None
    if recording:
        tensor_layer._tracer = RECORDER
    yield
    if recording:
        tensor_layer._tracer = None


class _WorkerNotes:
    """pytest-xdist's controller side: gathers the notes each worker sends when it is done."""

    @staticmethod
    def pytest_testnodedown(node: Any, error: Any) -> None:
        notes = getattr(node, "workeroutput", {})  # none from a worker that crashed
        RECORDER.seen.update(tuple(pair) for pair in notes.get("primitives", ()))
        WANTED.update(tuple(pair) for pair in notes.get("wanted", ()))


#: what should have run (device label, rule), where this run collected the suites whole
WANTED: set[tuple[str, str]] = set()


def _whole(config: pytest.Config, suite: str) -> bool:
    """Whether this run collects `suite` (a path under tests/) entirely: no -k, -m or
    --deselect, and a path argument that is the suite's folder or holds it."""
    if config.option.keyword or config.option.markexpr or config.option.deselect:
        return False
    folder = (TESTS / suite).resolve()
    paths = [Path(arg.split("::")[0]).resolve() for arg in config.args]
    return any(folder == p or p in folder.parents for p in paths)


def _wanted(config: pytest.Config) -> set[tuple[str, str]]:
    """What the suites this process collected whole should run (nothing for a partial run)."""
    if not _whole(config, "conformance"):
        return set()
    functional = _whole(config, str(Path("nn", "functional"))) and _whole(config, "autodiff")
    devices = _devices_for(TESTS / "conformance")
    return table_coverage.expected(devices, devices if functional else ())


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Each process merges the references it computed into build/conformance-golden.json
    (read back where numpy and PyTorch are absent); a worker sends its notes to the
    controller; the controller (or a run without workers) reports an op-table entry that no
    test ran as a failed test."""
    GOLDEN.save()
    config = session.config
    if hasattr(config, "workerinput"):
        config.workeroutput["primitives"] = sorted(RECORDER.seen)
        config.workeroutput["wanted"] = sorted(_wanted(config))
        return
    if not config.pluginmanager.hasplugin("xdist") or not WANTED:
        WANTED.update(_wanted(config))  # a run without workers: this process collected
    lacking = table_coverage.missing(RECORDER.seen, WANTED)
    if not lacking:
        return
    problem = ("these op-table entries ran on no test of the suites that check every "
               "primitive (a new entry needs a conformance case):\n  " + "\n  ".join(lacking))
    report = pytest.TestReport(
        nodeid="tests/table_coverage.py::every_table_entry_on_every_device",
        location=("tests/table_coverage.py", 0, "every_table_entry_on_every_device"),
        keywords={}, outcome="failed", longrepr=problem, when="call")
    config.hook.pytest_runtest_logreport(report=report)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
