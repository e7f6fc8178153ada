"""`pyburn serve` (pyburn/remote/server.py) and its sessions, from clients in this process: the
numbers equal local cpu's, sessions free their tensors, and bad clients get errors while the
others are served. Every server binds to 127.0.0.1 and every wait is bounded."""

from __future__ import annotations

import argparse
import threading

import numpy as np
import pytest
import trustme
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

import pyburn
from pyburn import nn, optim
from pyburn.backends import remote as remote_backend
from pyburn.backends.remote import RemoteBackend
from pyburn.ops.capability import CAPABILITIES
from pyburn.remote.process import ServerProcess
from pyburn.remote.protocol import TASKS, VERSION
from pyburn.remote.server import Background, Limits, check_binding
from pyburn.remote.wire import HandleId, ValueRef, pack, unpack

from .training import mlp, mlp_losses


@pytest.fixture(scope="module")
def served():
    with ServerProcess("cpu") as server:
        yield server


def test_ops_on_a_served_cpu_give_local_cpus_numbers(served):
    remote, local = pyburn.device(served.address), pyburn.device("cpu")
    data = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)

    def compute(dev):
        x = pyburn.from_numpy(data, device=dev)
        values, order = (x @ x.T).exp().sort(1)
        return [values.numpy(), order.numpy(), (x > 0).nonzero().numpy(),
                x.cumsum(0).amax(1).numpy(), x[1:, ::2].numpy(), x.double().sum().item()]

    for got, want in zip(compute(remote), compute(local)):
        np.testing.assert_array_equal(got, want)
    assert remote.name == served.address and remote.caps >= {"float64", "int64"}


def test_training_on_the_client_autodiff_equals_local(served):
    assert mlp_losses(pyburn.device(served.address).autodiff()) == \
        mlp_losses(pyburn.device("cpu").autodiff())


def test_concurrent_clients_each_get_their_own_numbers(served):
    want = mlp_losses(pyburn.device("cpu").autodiff(), steps=3)
    results: list[list[float]] = []

    def client() -> None:
        backend = RemoteBackend(served.url)
        dev = pyburn.devices.Device("remote", 0, backend, is_autodiff=True,
                                    address=served.url)
        results.append(mlp_losses(dev, steps=3))
        backend.close()

    threads = [threading.Thread(target=client) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert results == [want] * 8


def test_a_closed_session_frees_every_tensor_it_held():
    with Background("cpu") as background:
        backend = RemoteBackend(background.address.removeprefix("remote+"))
        dev = pyburn.devices.Device("remote", 0, backend, address="x")
        kept = [pyburn.ones(3, 3, device=dev) * i for i in range(5)]
        assert kept[-1].sum().item() == 36.0
        peak = background.server.tensors
        assert background.server.sessions == 1 and peak >= 5
        del kept[:]
        pyburn.zeros(1, device=dev).item()  # the next batch carries the drops
        held = background.server.tensors
        backend.close()
        for _ in range(100):
            if background.server.sessions == 0:
                break
            threading.Event().wait(0.05)
        # the five products are dropped (the scalars stay: the tensor layer caches constants)
        assert held <= peak - 5
        assert background.server.sessions == 0 and background.server.tensors == 0


def _raw(url: str, *frames: bytes) -> list:
    """The answers a raw WebSocket client gets to a hello, then `frames` (one each, or none)."""
    with connect(url, open_timeout=10) as ws:
        ws.send(pack(("hello", VERSION, 0, None)))
        answers = [unpack(ws.recv(timeout=10))]
        for frame in frames:
            ws.send(frame)
            try:
                answers.append(unpack(ws.recv(timeout=1)))
            except TimeoutError:
                answers.append(None)
        ws.send(pack(("register", 1, (("full", ((2,), ValueRef(0), pyburn.float32)),))))
        ws.send(pack(("run", ((1, (), (1.5,), 1),), ())))
        ws.send(pack(("read", 1, (2,), pyburn.float32)))
        answers.append(unpack(ws.recv(timeout=10)))
    return answers


def test_bad_frames_get_errors_and_the_session_goes_on(served):
    answers = _raw(served.url, b"\xc1", pack(("nope",)), pack(("call", "eval", ("1",), (9,))),
                   pack(("read", 77, (1,), pyburn.float32)), pack([1] * 3))
    assert answers[0][0] == "welcome"
    kinds = [a[:2] for a in answers[1:-1]]
    assert kinds == [("error", "protocol")] * 3 + [("error", "task"), ("error", "protocol")]
    assert "unknown task 'eval'" in answers[3][2]
    assert answers[-1] == ("data", np.full(2, 1.5, np.float32).tobytes())


def test_a_failed_queued_task_is_reported_at_the_next_read(served):
    backend = RemoteBackend(served.url)
    dev = pyburn.devices.Device("remote", 0, backend, address="x")
    bad = backend.unary("no_such_op", backend.full((2,), 1.0, pyburn.float32), pyburn.float32)
    assert isinstance(bad.id, int)  # queued: nothing has been sent yet
    with pytest.raises(pyburn.RemoteError, match="no_such_op"):
        pyburn.ones(2, device=dev).tolist()
    assert pyburn.ones(2, device=dev).tolist() == [1.0, 1.0]  # the session goes on
    backend.close()


def test_hello_checks_version_and_token(tmp_path):
    with Background("flex", token="s3cret") as background:
        url = background.address.removeprefix("remote+")
        with pytest.raises(pyburn.RemoteError, match="wrong token"):
            RemoteBackend(url, token="guess")
        with pytest.raises(pyburn.RemoteError, match="wrong token"):
            RemoteBackend(url)
        assert RemoteBackend(url, token="s3cret").served == "flex"
        with connect(url, open_timeout=10) as ws:
            ws.send(pack(("hello", VERSION + 1, 0, "s3cret")))
            assert unpack(ws.recv(timeout=10))[:2] == ("error", "protocol")
        with connect(url, open_timeout=10) as ws:
            ws.send(pack(("hello", VERSION, 1, "s3cret")))
            assert unpack(ws.recv(timeout=10))[2] == ("device 1: this server serves one device, "
                                                      "index 0")


def test_sessions_and_tensors_per_session_are_limited():
    with Background("cpu", max_sessions=1, limits=Limits(handles=4)) as background:
        url = background.address.removeprefix("remote+")
        first = RemoteBackend(url)
        with pytest.raises(pyburn.RemoteError, match="sessions open"):
            RemoteBackend(url)
        dev = pyburn.devices.Device("remote", 0, first, address="x")
        kept = [pyburn.full((2,), float(i), device=dev) for i in range(6)]
        with pytest.raises(pyburn.RemoteError, match="the most a session may"):
            kept[-1].tolist()
        assert kept[0].tolist() == [0.0, 0.0]  # what fitted is still there
        first.close()


def test_a_killed_server_is_an_error_not_a_hang():
    with ServerProcess("cpu") as server:
        dev = pyburn.device(server.address)
        x = pyburn.ones(4, device=dev)
        assert x.sum().item() == 4.0
        server.stop()
        with pytest.raises(pyburn.RemoteError, match="lost|closed|reach"):
            (x * 2).tolist()


def test_serving_beyond_this_machine_needs_a_token():
    check_binding("127.0.0.1", None)
    check_binding("localhost", None)
    with pytest.raises(pyburn.ArgumentError, match="needs a token"):
        check_binding("0.0.0.0", None)
    check_binding("0.0.0.0", "t")
    assert HandleId(1) == HandleId(1)


def test_a_recurring_batch_is_registered_once_then_replayed_by_id(served):
    backend = RemoteBackend(served.url)
    dev = pyburn.devices.Device("remote", 0, backend, address="x")
    x = pyburn.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3), device=dev)
    sent, results = [], []
    for step in range(4):  # the same ops, new handles and a new scalar each time
        before = backend.bytes_sent
        y = ((x * (step + 0.5)).exp() @ x.T).tanh().sum(0)
        results.append(y.numpy())
        sent.append(backend.bytes_sent - before)
    local = pyburn.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3), device="cpu")
    for step, got in enumerate(results):
        want = ((local * (step + 0.5)).exp() @ local.T).tanh().sum(0).numpy()
        np.testing.assert_array_equal(got, want)
    assert sent[2] == sent[3] and sent[3] < sent[0] / 4
    backend.close()


def test_runs_of_unknown_or_malformed_graphs_are_refused(served):
    answers = _raw(served.url, pack(("run", ((5, (), (), 100),), ())),
                   pack(("register", 1, (("eval", ()),))),
                   pack(("register", 2, (("full", ((2,), ValueRef(0), pyburn.float32)),))),
                   pack(("run", ((2, (), (), 50),), ())), pack(("read", 50, (2,), pyburn.float32)))
    # a message without an answer keeps its failure for the next request
    assert answers[1:5] == [None] * 4
    error = answers[5]
    assert error[:2] == ("error", "protocol") and "not registered" in error[2]


def test_memory_is_counted_once_per_buffer_and_freed_with_its_last_tensor():
    with Background("cpu") as background:
        backend = RemoteBackend(background.address.removeprefix("remote+"))
        dev = pyburn.devices.Device("remote", 0, backend, address="x")
        base = background.server.memory
        x = pyburn.ones(256, 256, device=dev)  # 256 KiB
        view, y = x.reshape(-1)[:1000], x * 3.0  # a view of x's buffer; a new buffer
        assert view.sum().item() == 1000.0
        held = background.server.memory - base
        assert 2 * 256 * 1024 <= held < 2 * 256 * 1024 + 1024  # and a few scalars
        del y
        pyburn.zeros(1, device=dev).item()  # the next frame carries the drop
        assert background.server.memory - base < held - 256 * 1024 + 1024
        backend.close()
        for _ in range(100):
            if background.server.sessions == 0:
                break
            threading.Event().wait(0.05)
        assert background.server.memory == 0


def test_sizes_on_the_command_line():
    from pyburn.remote.cli import byte_count

    assert [byte_count(t) for t in ("4GiB", "512MB", "1.5KiB", "100")] == \
        [4 << 30, 512 * 10**6, 1536, 100]
    with pytest.raises(argparse.ArgumentTypeError, match="not a size"):
        byte_count("4 parsecs")


def test_the_served_backends_capabilities_are_offered(served):
    caps = pyburn.device(served.address).caps
    assert {"linear", "softmax", "nll_loss", "adam", "conv", "max_pool"} <= caps
    assert all(m in TASKS for c in caps if c in CAPABILITIES for m in CAPABILITIES[c].methods)


def test_a_loop_that_never_reads_sends_each_graph_once(served):
    """The client ends graphs where the op stream recurs: a loop without reads registers
    its graphs in its first steps, then sends a couple of hundred bytes a step."""
    backend = RemoteBackend(served.url)
    dev = pyburn.devices.Device("remote", 0, backend, is_autodiff=True, address="x")
    model = mlp().to(dev)
    opt = optim.Adam(model.parameters(), lr=0.01)
    x = pyburn.from_numpy(np.ones((16, 6), np.float32), device=dev)
    y = pyburn.from_numpy(np.zeros(16, np.int32), device=dev)
    sent = []
    for _ in range(30):
        before = backend.bytes_sent
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        sent.append(backend.bytes_sent - before)
    later = sum(sent[10:]) / len(sent[10:])  # frames go every few steps: the mean per step
    assert later < 250 < sum(sent[:3]) / 3
    want = mlp_losses(pyburn.device("cpu").autodiff(), steps=1)
    assert nn.functional.cross_entropy(model(x), y).item() != want[0]  # it did train
    backend.close()


def test_browsers_connect_only_from_the_origins_the_server_names():
    with Background("cpu", origins=("http://127.0.0.1:8000",)) as background:
        url = background.address.removeprefix("remote+")
        with connect(url, open_timeout=10, origin="http://127.0.0.1:8000") as ws:
            ws.send(pack(("hello", VERSION, 0, None)))
            assert unpack(ws.recv(timeout=10))[0] == "welcome"
        with pytest.raises(InvalidStatus, match="403"):
            connect(url, open_timeout=10, origin="http://elsewhere.example")
        assert RemoteBackend(url).served == "cpu"  # not a browser: no origin, served


def test_past_the_most_graphs_a_client_registers_results_stay_right(served, monkeypatch):
    """Past MAX_GRAPHS each graph is registered anew as graph 0: the runs before it are sent
    first, and the handles dropped meanwhile only after the graph that may still use them."""
    monkeypatch.setattr(remote_backend, "MAX_GRAPHS", 2)
    monkeypatch.setattr(remote_backend, "FRAME_TASKS", 10**6)  # runs wait for a frame
    backend = RemoteBackend(served.url)
    dev = pyburn.devices.Device("remote", 0, backend, address="x")
    data = np.arange(12, dtype=np.float32).reshape(3, 4)

    def compute(device: pyburn.Device) -> list:
        x, out = pyburn.from_numpy(data, device=device), []
        for k in range(6):  # distinct graphs, each leaving intermediates behind
            y = x
            for _ in range(remote_backend.MIN_TASKS + k):
                y = (y * 1.01).tanh() + float(k)
            out.append(y.sum(1))
        return [t.numpy() for t in out]

    for got, want in zip(compute(dev), compute(pyburn.device("cpu"))):
        np.testing.assert_array_equal(got, want)
    backend.close()


def test_wss_checks_the_servers_certificate(tmp_path, monkeypatch):
    """`pyburn serve --tls-cert --tls-key` serves wss://; a client trusts it through the CA
    in $PYBURN_REMOTE_CA, and refuses it under any other authority."""
    ca, stranger = trustme.CA(), trustme.CA()
    chain = tmp_path / "server.pem"
    ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(str(chain))
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    stranger.cert_pem.write_to_path(str(tmp_path / "stranger.pem"))
    with ServerProcess("cpu", "--tls-cert", str(chain), "--tls-key", str(chain)) as server:
        try:
            assert server.url.startswith("wss://127.0.0.1:")
            monkeypatch.setenv("PYBURN_REMOTE_CA", str(tmp_path / "ca.pem"))
            backend = RemoteBackend(server.url)
            dev = pyburn.devices.Device("remote", 0, backend, address="x")
            assert (pyburn.arange(4, device=dev) * 2).tolist() == [0, 2, 4, 6]
            backend.close()
            monkeypatch.setenv("PYBURN_REMOTE_CA", str(tmp_path / "stranger.pem"))
            with pytest.raises(pyburn.RemoteError,
                               match="cannot reach.*CERTIFICATE_VERIFY_FAILED"):
                RemoteBackend(server.url)
        finally:  # shown by pytest where the test fails: what the server said
            print(f"pyburn serve's output:\n{server.log}")
