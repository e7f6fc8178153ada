"""The exceptions pyburn raises for bad input: one family, each naming what was wrong."""

from __future__ import annotations


class PyburnError(Exception):
    """Base class of every error pyburn raises on purpose."""


class ShapeError(PyburnError, ValueError):
    """Shapes that do not fit together (broadcasting, matmul, reshape, cat, ...)."""


class DimError(PyburnError, IndexError):
    """A dimension index outside the tensor's rank."""


class IndexOutOfRange(PyburnError, IndexError):
    """An element index outside the size of the dimension it indexes."""

    @classmethod
    def at(cls, what: str, bad: int, size: int, note: str = "") -> IndexOutOfRange:
        """The error for index `bad` of `what`, whose dim has `size` entries; `note` (where
        it was checked) is added in parentheses."""
        message = f"{what}: index {bad} is out of range for size {size}"
        return cls(f"{message} ({note})" if note else message)


class DTypeError(PyburnError, TypeError):
    """A dtype that the operation or the device does not support."""


class DeviceError(PyburnError, ValueError):
    """An unknown or unavailable device, or tensors on different devices in one op."""


class ArgumentError(PyburnError, ValueError):
    """Any other argument that is out of its allowed range or of the wrong kind."""


class ReadbackError(PyburnError, RuntimeError):
    """A synchronous read that the platform cannot perform (use the `_async` form)."""


class FormatError(PyburnError, ValueError):
    """A file or byte buffer that is truncated, corrupt or not in the expected format."""


class MissingExtraError(PyburnError, ImportError):
    """An optional dependency (an extra such as numpy or wgpu) that is not installed."""


class RemoteError(PyburnError, RuntimeError):
    """A remote device's server refused a request, failed running it, or went away."""


class WebBuildError(PyburnError, ValueError):
    """`pyburn web build` refused an app: a missing entry point, an asset outside the app or
    unreadable, or a tool the build needs (npm, Node.js) that is not installed."""


class WorkerError(PyburnError, RuntimeError):
    """A worker process (an environment of `pyburn.rl.AsyncVectorEnv`) that died, or did not
    answer within its time limit."""


class WorkerFailed(WorkerError):
    """A worker of a distributed run (`pyburn.distributed`) that died or failed, with no
    checkpoint to restart from or no restarts left."""


class CollectiveTimeout(PyburnError, TimeoutError):
    """A collective operation of `pyburn.distributed` that some ranks did not join within
    the group's timeout (the message names the operation and the missing ranks)."""


class ResultMismatch(PyburnError, RuntimeError):
    """pyburn and a reference (a benchmark's peer) that gave different results for the same
    inputs, beyond the tolerance the comparison allows."""
