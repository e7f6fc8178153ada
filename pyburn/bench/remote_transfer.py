"""burn-bench's remote benchmark: a tensor moved between two `pyburn serve` processes on
127.0.0.1, against the same steps as copies in the client's memory, in the same run.

Each call draws a random float32 tensor on server A, reads it, moves it to server B
(``t.to("remote+ws://...")``: the client reads it from A and uploads it to B), reads it there,
moves it back to A and reads it again: three reads and two moves, each carrying the tensor's
bytes once, so MB/s counts five times its bytes per call. (burn-bench's family is named
``remote``; pyburn's ``remote`` family measures the remote device against local cpu, so
this one is ``remote_transfer``.) The peer does the same steps with numpy in the client: the
draw, ``tobytes`` for a read and ``copy`` for a move; it says what the moves cost over a
copy in memory, that is, what the two servers and the loopback add. Before the timing, one
call checks that every read gave the same bytes.

Shapes are burn-bench's, [1, 16, 16] and [1, 8, 8] (1 KiB and 256 B, where the round trips
are the whole cost), and [1, 512, 1024] (2 MiB, where the bytes are); a few elements at
``--size small``. No targets: reported. Servers run ``--cpu-threads 1``: the client needs a
core too.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pyburn

from ..backends import remote
from ..errors import RemoteError
from ..remote.process import ServerProcess
from . import peers
from .inputs import described
from .report import Row
from .suite import Benchmark, unavailable
from .timing import Settings, Timing, measure

Shape = tuple[int, ...]
#: burn-bench's two shapes, then one where the bytes dominate; this family's small ones
SHAPES: tuple[Shape, ...] = ((1, 16, 16), (1, 8, 8), (1, 512, 1024))
QUICK_SHAPES: tuple[Shape, ...] = ((1, 4, 4), (1, 2, 2), (1, 16, 64))
#: the tensor's trips per call: three reads and two moves
TRANSFERS = 5
STEPS = "rand on server A, read, .to(B), read, .to(A), read"


def _between(a: pyburn.Device, b: pyburn.Device, shape: Shape) -> Callable[[], tuple]:
    """A call of the steps between servers `a` and `b`; it returns the three reads."""
    def run() -> tuple[bytes, ...]:
        x = pyburn.rand(*shape, device=a)
        first = x.to_bytes()
        y = x.to(b)
        there = y.to_bytes()
        return first, there, y.to(a).to_bytes()

    return run


def _copies(shape: Shape) -> Callable[[], tuple]:
    """The same steps in numpy: a draw, reads as ``tobytes``, moves as ``copy``."""
    np = peers.load("numpy")
    assert np is not None  # the servers' cpu device needs numpy: `requires` checked it
    generator = np.random.default_rng(0)

    def run() -> tuple[bytes, ...]:
        x = generator.random(shape, dtype=np.float32)
        first = x.tobytes()
        y = x.copy()
        there = y.tobytes()
        return first, there, y.copy().tobytes()

    return run


def _checked(run: Callable[[], tuple]) -> Callable[[], tuple]:
    """`run`, once its three reads have been seen to agree."""
    first, there, back = run()
    if not first == there == back:
        raise RemoteError("a tensor moved between two pyburn serve processes came back with "
                          "other bytes")
    return run


def _row(shape: Shape, times: dict[str, Timing], quick: bool) -> Row:
    """The row of the steps on a tensor of `shape`, in MB/s."""
    nbytes = 4 * math.prod(shape)
    return Row.compare("remote_transfer.cpu", f"{STEPS}: {described(shape)}, vs numpy copies in "
                       "the client", "MB/s",
                       lambda seconds: TRANSFERS * nbytes / seconds / 1e6, times, "numpy",
                       f"{peers.label('numpy')} copies", None, quick)


def measure_cpu(settings: Settings) -> list[Row]:
    """MB/s of the steps between two servers, per shape, against numpy copies."""
    # one thread per server: the client, on this same machine, needs a core too
    with ServerProcess("cpu", "--cpu-threads", "1") as server_a, \
            ServerProcess("cpu", "--cpu-threads", "1") as server_b:
        a, b = pyburn.device(server_a.address), pyburn.device(server_b.address)
        return [_row(shape, measure({"pyburn": _checked(_between(a, b, shape)),
                                     "numpy": _copies(shape)}, settings), settings.quick)
                for shape in (QUICK_SHAPES if settings.quick else SHAPES)]


def requires() -> str | None:
    """Why this benchmark cannot run here: no remote device (websockets) or no cpu device
    for the servers (numpy)."""
    return remote.REGISTRATION.unavailable_reason() or unavailable("cpu")


BENCHMARKS = (
    Benchmark("remote_transfer", "cpu", "burn-bench's remote: a tensor moved between two "
              "pyburn serve processes and back, MB/s, vs numpy copies", measure_cpu,
              requires),
)
