"""`pyburn serve` under faults: many clients at once, thousands of malformed frames on a live
session, a client killed mid-op, a server killed while a client waits, the token file of the
CLI, and the per-session memory limit. Every server binds to 127.0.0.1, every wait is bounded,
and every test stops what it started."""

from __future__ import annotations

import gc
import queue
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

import pyburn
from pyburn.backends.remote import RemoteBackend
from pyburn.remote.process import ServerProcess
from pyburn.remote.protocol import TASKS, VERSION
from pyburn.remote.server import Background, Limits
from pyburn.remote.wire import HandleId, LocalRef, ParamRef, ValueRef, WireError, pack, unpack

from .training import mlp_losses


def _session(url: str, token: str | None = None) -> tuple[RemoteBackend, pyburn.Device]:
    """A session of its own (pyburn.device keeps one per address) and its device."""
    backend = RemoteBackend(url, token=token)
    return backend, pyburn.devices.Device("remote", 0, backend, is_autodiff=True, address=url)


def _until(done: Callable[[], bool], seconds: float) -> bool:
    """Poll `done` until it holds or `seconds` pass; whether it held."""
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _url(background: Background) -> str:
    return background.address.removeprefix("remote+")


def test_fifty_concurrent_clients_train_to_local_cpus_losses():
    """50 sessions training an MLP at once each get exactly local autodiff's losses."""
    steps, clients = 20, 50
    want = mlp_losses(pyburn.device("cpu").autodiff(), steps)
    results: dict[int, Any] = {}

    with ServerProcess("cpu") as server:
        def client(i: int) -> None:
            try:
                backend, dev = _session(server.url)
            except Exception as exc:
                results[i] = exc
                return
            try:
                results[i] = mlp_losses(dev, steps)
            except Exception as exc:
                results[i] = exc
            finally:
                backend.close()

        threads = [threading.Thread(target=client, args=(i,), daemon=True)
                   for i in range(clients)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 120
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        hung = [i for i, t in enumerate(threads) if t.is_alive()]
    assert not hung, f"clients {hung} did not finish within 120 s"
    wrong = {i: got for i, got in sorted(results.items()) if got != want}
    assert len(results) == clients and not wrong, f"local: {want}; differing clients: {wrong}"


# ---- fuzzing a live session ------------------------------------------------------------------
#: the id of the tensor every sanity read reads: no fuzzed frame names it or drops it
SANITY = 7_777_777
SANITY_BYTES = np.full(3, 1234.5, np.float32).tobytes()
#: the ints fuzzed values are made of: small ones (tensors of these shapes are small) and ones
#: too large for any shape, never one in between (a shape that would allocate gigabytes)
_INTS = (-(1 << 63), -7, -1, 0, 1, 2, 3, 5, 11, 1 << 62, (1 << 63) - 1, (1 << 64) - 1)
_IDS = (0, 1, 2, 3, 5, 11, 1 << 62, (1 << 64) - 1)
_KINDS = ("hello", "register", "run", "read", "call", "drop", "welcome", "data", "result",
          "error", "", "RUN", "nope")
_NAMES = (*TASKS, "eval", "exec", "__class__", "__init__", "to_bytes", "storage", "close",
          "handles", "answer", "", "é", "x" * 40)
_DTYPES = (pyburn.float32, pyburn.int32, pyburn.bool_, pyburn.float64, pyburn.int64)
#: the shapes of the valid frames whose truncations are fuzzed
_VALID = (("register", 1, (("full", ((2,), ValueRef(0), pyburn.float32)),)),
          ("run", 1, (), (2.5,), 40, ((30, 2),)), ("run", ((1, (), (2.5,), 40),), ((30, 2),)),
          ("read", 40, (2,), pyburn.float32),
          ("call", "full", ((3,), 1.0, pyburn.float32), (41,)), ("drop", ((40, 2),)),
          ("call", "unary", ("exp", HandleId(41), pyburn.float32), (42,)))


def _junk(rng: random.Random, depth: int = 0) -> Any:
    """A random protocol value: scalars, bytes, handles, references, dtypes, containers."""
    pick = rng.randrange(12 if depth < 3 else 8)
    if pick == 0:
        return rng.choice(_INTS)
    if pick == 1:
        return rng.choice((0.0, -0.0, 1.5, float("nan"), float("inf"), -1e308))
    if pick == 2:
        return rng.choice(_NAMES + _KINDS)
    if pick == 3:
        return rng.randbytes(rng.randrange(9))
    if pick == 4:
        return rng.choice((None, True, False))
    if pick == 5:
        return HandleId(rng.choice(_IDS))
    if pick == 6:
        return rng.choice((LocalRef, ParamRef, ValueRef))(rng.choice((0, 1, 3, (1 << 32) - 1)))
    if pick == 7:
        return rng.choice(_DTYPES)
    if pick < 11:
        return tuple(_junk(rng, depth + 1) for _ in range(rng.randrange(5)))
    return {rng.choice(("a", "id", 0, -1)): _junk(rng, depth + 1) for _ in range(3)}


#: the arguments of tasks by kind (`_args`): their values random, their kinds mostly right
_SIGNATURES = {
    "full": "shape num dtype", "arange": "num num int dtype", "random_bits": "shape int int",
    "unary": "op h dtype", "binary": "op h h dtype", "where": "h h h", "cast": "h dtype",
    "reduce": "op h ints", "arg_reduce": "op h int", "scan": "op h int", "reshape": "h shape",
    "permute": "h ints", "expand": "h shape", "slice": "h ints ints ints", "flip": "h ints",
    "pad": "h pads num", "cat": "hs int", "gather": "h int h", "scatter": "h int h h op",
    "index_select": "h int h", "nonzero": "h", "sort": "h int num", "matmul": "h h",
    "from_bytes": "bytes shape dtype", "softmax": "h int", "linear": "h h h",
    "check_range": "h int dtype int int op op int", "nll_loss": "h h int int",
}
_OPS = ("exp", "neg", "add", "mul", "sum", "max", "argmax", "cumsum", "nope", "__import__")
_SMALL = (0, 1, 2, 3, 5, 11)


def _arg(rng: random.Random, kind: str, handle: Callable[[], Any]) -> Any:
    """A random argument of `kind`; `handle()` makes a handle (or a reference in a graph)."""
    if rng.random() < 0.1:
        return _junk(rng, 2)
    if kind == "h":
        return handle()
    if kind == "hs":
        return tuple(handle() for _ in range(rng.randrange(4)))
    if kind == "shape":
        return tuple(rng.choice(_SMALL + (-1, 1 << 62)) if rng.random() < 0.1 else
                     rng.choice(_SMALL) for _ in range(rng.randrange(4)))
    if kind in ("int", "ints"):
        ints = tuple(rng.choice(_INTS[1:9]) if rng.random() < 0.8 else rng.choice(_INTS)
                     for _ in range(rng.randrange(1, 4) if kind == "ints" else 1))
        return ints if kind == "ints" else ints[0]
    if kind == "num":
        return rng.choice((0, 1, -3, 2.5, float("nan"), True, False, 1 << 62))
    if kind == "pads":
        return tuple((rng.choice(_SMALL), rng.choice((0, 1, -1))) for _ in range(rng.randrange(4)))
    if kind == "bytes":
        return rng.randbytes(rng.choice((0, 3, 4, 8, 12, 44)))
    if kind == "dtype":
        return rng.choice(_DTYPES)
    return rng.choice(_OPS)


def _args(rng: random.Random, name: str, handle: Callable[[], Any]) -> tuple:
    """Arguments for task `name`: of its kinds (now and then one too many or too few)."""
    kinds = _SIGNATURES.get(name, "").split() or [
        rng.choice(("h", "int", "shape", "num", "dtype", "op")) for _ in range(rng.randrange(6))]
    if rng.random() < 0.1:
        kinds = kinds[:-1] if kinds and rng.random() < 0.5 else [*kinds, "int"]
    return tuple(_arg(rng, kind, handle) for kind in kinds)


def _spans(rng: random.Random) -> tuple:
    return tuple((rng.choice(_INTS), rng.choice(_INTS)) for _ in range(rng.randrange(4)))


def _message(rng: random.Random) -> Any:
    """A value of a wrong shape: an unknown kind, a known one with the wrong arity or types,
    or one of the right arity with junk, out-of-range references, huge ids, negative counts."""
    pick = rng.choice((0, 1, 2, 2, 3, 3, 4, 5, 5, 5, 5, 6, 7, 8))
    if pick == 0:
        return _junk(rng)
    if pick == 1:
        return (rng.choice(_KINDS), *(_junk(rng) for _ in range(rng.randrange(7))))
    if pick == 2:  # a graph of known (and unknown) tasks, its references in range or not
        def ref() -> Any:
            kind = rng.choice((LocalRef, ParamRef, ValueRef, ValueRef, HandleId))
            return kind(rng.choice((0, 1, 2, 7, (1 << 32) - 1)))

        tasks = tuple((name, _args(rng, name, ref)) if rng.random() < 0.9 else
                      (name, _junk(rng, 1)) for name in
                      (rng.choice(_NAMES) for _ in range(rng.randrange(5))))
        return ("register", rng.choice(_INTS + (1, 2, 3)), tasks)
    if pick == 3:  # runs of graphs, registered or not, on junk (alone, or several at once)
        runs = tuple((rng.choice((1, 2, 3, *_INTS)) if rng.random() < 0.9 else _junk(rng, 2),
                      tuple(rng.choice(_IDS) for _ in range(rng.randrange(3))),
                      tuple(_junk(rng, 1) for _ in range(rng.randrange(3))), rng.choice(_INTS))
                     for _ in range(rng.randrange(1, 3)))
        if rng.random() < 0.5:
            return ("run", *runs[0], _spans(rng))
        return ("run", runs, _spans(rng))
    if pick == 4:
        return ("read", rng.choice(_SMALL + _IDS + _INTS), _arg(rng, "shape", lambda: None),
                rng.choice(_DTYPES + (1, "x")))
    if pick == 5:  # a call of a task (often one that makes a tensor from nothing), its
        # arguments mostly of the right kinds
        name = rng.choice(_NAMES if rng.random() < 0.3 else
                          ("full", "arange", "random_bits", "from_bytes") if rng.random() < 0.4
                          else tuple(TASKS))
        outs = TASKS[name].outputs if name in TASKS and rng.random() < 0.8 else rng.randrange(3)
        return ("call", name, _args(rng, name, lambda: HandleId(rng.choice(_SMALL))),
                tuple(rng.choice(_SMALL) if rng.random() < 0.9 else rng.choice(_IDS)
                      for _ in range(outs)))
    if pick == 6:
        return ("drop", _spans(rng))
    if pick == 7:  # the right kinds, the wrong number of items
        kind = rng.choice(("run", "register", "read", "call", "drop"))
        arity = {"run": (2, 5), "register": (2,), "read": (3,), "call": (3,), "drop": (1,)}
        n = rng.choice([k for k in range(8) if k not in arity[kind]])
        return (kind, *(_junk(rng, 1) for _ in range(n)))
    return ("call", rng.choice(_NAMES), _junk(rng, 1), _junk(rng, 1))


def _spare(value: Any) -> Any:
    """`value` with every (first, count) pair that covers SANITY shortened to nothing, so
    that no fuzzed drop forgets the tensor the sanity reads read."""
    if isinstance(value, tuple):
        if (len(value) == 2 and all(type(v) is int for v in value)
                and value[0] <= SANITY < value[0] + value[1]):
            return (value[0], 0)
        return tuple(_spare(v) for v in value)
    if isinstance(value, dict):
        return {k: _spare(v) for k, v in value.items()}
    return value


def _frame(rng: random.Random) -> bytes | str:
    """One malformed frame: random bytes, a truncated valid frame, a text frame, or a
    well-formed value of a wrong shape."""
    pick = rng.random()
    if pick < 0.15:
        return rng.randbytes(rng.randrange(1, 48))
    if pick < 0.3:
        frame = pack(rng.choice(_VALID))
        return frame[:rng.randrange(len(frame))]
    if pick < 0.33:
        return rng.choice(("", "hello", '["read", 1]'))
    return pack(_spare(_message(rng)))


def _answered(frame: bytes | str) -> bool:
    """Whether the server must answer `frame`: everything but a run, register or drop (those
    answer only when refused)."""
    try:
        message = unpack(frame)
    except WireError:
        return True
    return not (isinstance(message, tuple) and message
                and message[0] in ("run", "register", "drop"))


def _hello(ws: Any) -> tuple:
    ws.send(pack(("hello", VERSION, 0, None)))
    return unpack(ws.recv(timeout=10))


def _sync(ws: Any, marker: str, most: int) -> list:
    """Read the session's two sanity tensors, then ask for `marker` (an unknown request):
    the answers up to the marker's (its error), at most `most` of them."""
    ws.send(pack(("read", SANITY, (3,), pyburn.float32)))
    ws.send(pack(("read", SANITY, (3,), pyburn.float32)))
    ws.send(pack((marker,)))
    answers: list = []
    while len(answers) < most:
        answers.append(unpack(ws.recv(timeout=10)))
        if answers[-1][:2] == ("error", "protocol") and repr(marker) in answers[-1][2]:
            break
    return answers


def _culprit(frames: list) -> str:
    """The first of `frames` after which a fresh session on a fresh server is closed or stops
    answering, replayed one at a time (each followed by two unknown requests: the first may
    answer for a queued failure, the second answers for itself)."""
    with Background("cpu") as bg, connect(_url(bg), open_timeout=10, max_queue=None) as ws:
        _hello(ws)
        for n, frame in enumerate(frames):
            ws.send(frame)
            ws.send(pack(("marker",)))
            ws.send(pack(("marker2",)))
            try:
                while "'marker2'" not in str(unpack(ws.recv(timeout=10))):
                    pass
            except (ConnectionClosed, TimeoutError) as exc:
                try:
                    value = unpack(frame)
                except WireError as error:
                    value = error
                return f"{type(exc).__name__} after frame {n} of the batch: {value!r}"
    return "no single frame of the batch, replayed alone, does it"


def _check_answer(answer: Any) -> None:
    assert isinstance(answer, tuple) and answer and answer[0] in ("error", "data", "result"), \
        answer
    if answer[0] == "error":
        assert len(answer) == 3 and answer[1] in ("protocol", "task", "limit", "index") and \
            isinstance(answer[2], str), answer
    else:
        assert len(answer) == 2, answer


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy's, of fuzzed fill values
def test_thousands_of_malformed_frames_never_end_a_session():
    """3,000 fuzzed frames on one session get error answers (or none), never a crash or a
    close; its tensor stays intact, another session computes correctly throughout, and
    closing the fuzzed session frees its tensors."""
    rng = random.Random(15)
    batches, size = 30, 100
    with Background("cpu") as bg:
        url = _url(bg)
        good, dev = _session(url)
        data = np.random.default_rng(2)
        problems: list[str] = []
        stop = threading.Event()
        checked = [0]

        def check_good() -> None:
            a = data.standard_normal((5, 7)).astype(np.float32)
            b = data.standard_normal((7, 3)).astype(np.float32)
            got = (pyburn.from_numpy(a, device=dev) @ pyburn.from_numpy(b, device=dev)).sum(1)
            np.testing.assert_allclose(got.numpy(), (a @ b).sum(1), rtol=1e-5, atol=1e-6)
            checked[0] += 1

        def keep_checking() -> None:
            try:
                while not stop.is_set() and checked[0] < 10_000:
                    check_good()
            except Exception as exc:
                problems.append(repr(exc))

        try:
            check_good()
            good_session = next(iter(bg.server.open))
            with connect(url, open_timeout=10, max_queue=None) as ws:
                assert _hello(ws)[0] == "welcome"
                fuzzed = next(s for s in bg.server.open if s is not good_session)
                ws.send(pack(("call", "full", ((3,), 1234.5, pyburn.float32), (SANITY,))))
                assert unpack(ws.recv(timeout=10)) == ("result", None)
                assert _sync(ws, "marker-setup", 3)[-2:-1] == [("data", SANITY_BYTES)]
                checker = threading.Thread(target=keep_checking, daemon=True)
                checker.start()
                for batch in range(batches):
                    frames = [_frame(rng) for _ in range(size)]
                    must = sum(map(_answered, frames))
                    lost: Exception | None = None
                    try:
                        for frame in frames:
                            ws.send(frame)
                        answers = _sync(ws, f"marker-{batch}", size + 3)
                    except (ConnectionClosed, TimeoutError) as exc:
                        lost = exc
                    if lost is not None:
                        stop.set()
                        what = "ended" if fuzzed not in bg.server.open else "stopped answering"
                        pytest.fail(f"the server {what} the fuzzed session in batch {batch} "
                                    f"({type(lost).__name__}); {_culprit(frames)}")
                    for answer in answers:
                        _check_answer(answer)
                    assert must + 3 <= len(answers), (batch, must, answers)
                    assert answers[-2] == ("data", SANITY_BYTES), (batch, answers[-3:])
                    assert answers[-3][0] == "error" or answers[-3] == ("data", SANITY_BYTES)
                    assert fuzzed in bg.server.open
                stop.set()
                checker.join(30)
                assert not checker.is_alive() and not problems, problems
                assert checked[0] > 1
                check_good()
                assert fuzzed.handles  # the sanity tensor at least
            assert _until(lambda: fuzzed not in bg.server.open and not fuzzed.handles, 10)
            assert bg.server.sessions == 1
            assert bg.server.tensors == len(good_session.handles)
            check_good()
        finally:
            stop.set()
            good.close()
        assert _until(lambda: bg.server.sessions == 0 and bg.server.tensors == 0, 10)


# ---- killed peers ----------------------------------------------------------------------------
#: a client that makes large tensors, says "ready" once the server computed with them, then
#: queues matmuls for as long as it lives, reading a number every few (as a training loop
#: reads its loss: a client that never reads runs ahead of the server by as much as the
#: sockets buffer, which the server computes before it sees the connection end)
_VICTIM = """
import sys
import pyburn
from pyburn.backends.remote import RemoteBackend
backend = RemoteBackend(sys.argv[1])
dev = pyburn.devices.Device("remote", 0, backend, address=sys.argv[1])
xs = [pyburn.randn(512, 512, device=dev) for _ in range(4)]
y = xs[0] @ xs[1]
y.sum().item()
print("ready", flush=True)
step = 0
while True:
    for x in xs:
        y = (y @ x).tanh()
    step += 1
    if step % 4 == 0:
        y[0, 0].item()
    else:
        backend.flush()
"""


def _lines(stream: Any) -> queue.Queue:
    """The lines of `stream`, read on a thread so that each wait for one is bounded."""
    lines: queue.Queue = queue.Queue()

    def read() -> None:
        for line in stream:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    return lines


def test_a_client_killed_mid_op_frees_its_session():
    """SIGKILLing a client process while it queues matmuls on 512x512 tensors frees its session
    and every tensor; the server goes on serving others."""
    with Background("cpu") as bg:
        url = _url(bg)
        victim = subprocess.Popen([sys.executable, "-c", _VICTIM, url], text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            lines = _lines(victim.stdout)
            try:
                line = lines.get(timeout=60)
            except queue.Empty:
                line = "(nothing within 60 s)"
            assert line == "ready\n", line + "".join(iter(lambda: lines.get(timeout=5), None))
            assert bg.server.sessions == 1 and bg.server.tensors >= 4
            time.sleep(0.3)  # let it queue and the server run some of the matmuls
            assert victim.poll() is None  # still queuing
            victim.send_signal(signal.SIGKILL)
            assert victim.wait(10) == -signal.SIGKILL
        finally:
            if victim.poll() is None:
                victim.kill()
                victim.wait(10)
        assert _until(lambda: bg.server.sessions == 0 and bg.server.tensors == 0, 20), \
            (bg.server.sessions, bg.server.tensors)
        backend, dev = _session(url)
        try:
            assert (pyburn.ones(3, 3, device=dev) @ pyburn.ones(3, 3, device=dev)).sum().item() \
                == 27.0
        finally:
            backend.close()
        assert _until(lambda: bg.server.sessions == 0, 10)


def test_a_server_killed_during_a_read_fails_the_read_promptly():
    """A read waiting on a server that is computing queued matmuls raises RemoteError within
    15 s of the server being killed, and so does every later request."""
    with ServerProcess("cpu") as server:
        backend, dev = _session(server.url)
        try:
            x = pyburn.randn(1024, 1024, device=dev) / 32
            assert abs(x[0, 0].item()) < 1  # the server is up
            y = x
            for _ in range(200):  # seconds of work queued on the server
                y = (y @ x).tanh()
            outcome: dict[str, Any] = {}
            sent = backend.bytes_sent

            def read() -> None:
                try:
                    outcome["value"] = y.sum().item()
                except BaseException as exc:
                    outcome["error"] = exc

            reader = threading.Thread(target=read, daemon=True)
            reader.start()
            assert _until(lambda: backend.bytes_sent > sent, 10)  # the read is on its way
            time.sleep(0.2)
            assert reader.is_alive(), outcome  # and waits for its answer
            killed = time.monotonic()
            server.stop()
            reader.join(15)
            waited = time.monotonic() - killed
            assert not reader.is_alive(), "the read still waits 15 s after the server died"
            assert isinstance(outcome.get("error"), pyburn.RemoteError), outcome
            assert waited < 15
            started = time.monotonic()
            with pytest.raises(pyburn.RemoteError, match="lost|closed|reach"):
                (x * 2).tolist()
            assert time.monotonic() - started < 15
        finally:
            backend.close()


def test_the_cli_token_file_refuses_a_wrong_token_and_accepts_the_right_one(tmp_path,
                                                                           monkeypatch):
    """`pyburn serve --token-file` refuses a wrong or missing token with a RemoteError saying
    so (without the token), keeps no session for it, and serves the right one."""
    secret = "s3cret-token"
    path = tmp_path / "token"
    path.write_text(secret + "\n")  # the file's trailing newline is not part of the token
    # the device connected here is forgotten at the end (a later server may get its port)
    monkeypatch.setattr(pyburn.devices, "_devices", dict(pyburn.devices._devices))
    with ServerProcess("cpu", "--token-file", str(path), "--max-sessions", "1") as server:
        monkeypatch.setenv("PYBURN_REMOTE_TOKEN", "guess")
        for _ in range(3):  # refused sessions would fill the one the server allows
            with pytest.raises(pyburn.RemoteError, match="wrong token") as refused:
                pyburn.device(server.address)
            assert secret not in str(refused.value)
        with pytest.raises(pyburn.RemoteError, match="wrong token"):
            RemoteBackend(server.url)
        monkeypatch.setenv("PYBURN_REMOTE_TOKEN", secret)
        dev = pyburn.device(server.address)
        try:
            assert (pyburn.arange(5, device=dev) * 2).tolist() == [0, 2, 4, 6, 8]
        finally:
            dev.backend.close()
        # the closed session is freed: the server's one session is open to a new client
        second: list[RemoteBackend] = []

        def reconnect() -> bool:
            try:
                second.append(RemoteBackend(server.url, token=secret))
            except pyburn.RemoteError as exc:
                assert "sessions open" in str(exc), exc
                return False
            return True

        assert _until(reconnect, 10)
        try:
            assert second[0].served == "cpu"
        finally:
            second[0].close()


def test_a_session_past_its_memory_limit_gets_an_error_and_keeps_what_fitted():
    """Past Limits.memory_bytes a session's next read raises a RemoteError naming memory; its
    earlier tensors read back, another session is unaffected, and closing it gives back
    every byte it held."""
    data = np.random.default_rng(3)
    with Background("cpu", limits=Limits(memory_bytes=1 << 20)) as bg:
        url = _url(bg)
        other, other_dev = _session(url)
        first = None
        try:
            base = data.standard_normal((64, 64)).astype(np.float32)
            kept = pyburn.from_numpy(base, device=other_dev)
            assert np.array_equal(kept.numpy(), base)
            before = bg.server.memory
            assert before >= base.nbytes

            first, dev = _session(url)
            arrays = [data.standard_normal((256, 256)).astype(np.float32) for _ in range(3)]
            made = [pyburn.from_numpy(a, device=dev) for a in arrays]  # 768 KiB: fits
            assert np.array_equal(made[-1].numpy(), arrays[-1])
            too_much = pyburn.from_numpy(  # 512 KiB more: past 1 MiB
                data.standard_normal((256, 512)).astype(np.float32), device=dev)
            with pytest.raises(pyburn.RemoteError, match="memory"):
                too_much.numpy()
            for got, want in zip(made, arrays):
                assert np.array_equal(got.numpy(), want)
            during = bg.server.memory
            assert 3 * arrays[0].nbytes <= during - before <= 1 << 20

            # the other session may hold as much again, and computes as before
            a = data.standard_normal((256, 256)).astype(np.float32)
            b = pyburn.from_numpy(a, device=other_dev)
            got = (b @ b + kept.sum()).sum(0)
            np.testing.assert_allclose(got.numpy(), (a @ a + base.sum()).sum(0), rtol=1e-4)
            assert np.array_equal(kept.numpy(), base)
            del b, got
            gc.collect()
            other.flush()  # its drops: it holds what it held before
            assert _until(lambda: bg.server.memory == during, 10), (bg.server.memory, during)

            first.close()
            first = None
            assert _until(lambda: bg.server.memory == before, 10), (bg.server.memory, before)
            assert bg.server.sessions == 1
        finally:
            if first is not None:
                first.close()
            other.close()
        assert _until(lambda: bg.server.sessions == 0 and bg.server.memory == 0, 10)

