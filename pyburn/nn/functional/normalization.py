"""Normalisation layers' functional forms: batch, layer, group, instance and RMS norm, and
`normalize` (divide by a p-norm).

Running statistics are updated the PyTorch way, in place: ``batch_norm(..., training=True)``
and ``instance_norm`` with running tensors make those tensors hold the new running mean and
(unbiased) variance, ``(1 - momentum) * running + momentum * batch_stat``. pyburn's in-place
form is ``Tensor.assign_``: the running tensors are rebound to new values, never recorded for
gradients (the batch statistics are detached first), and any graph that already used their
old values keeps them. layer_norm, and batch_norm with batch statistics and in evaluation,
are one backend call each where the backend offers the "layer_norm" / "batch_norm" /
"batch_norm_eval" capability (`capability.offered`; in evaluation only for running
statistics that require no grad, which then get none).
"""

from __future__ import annotations

from collections.abc import Sequence

from ... import ArgumentError, ShapeError, Tensor
from ...ops import capability
from ...ops.capability import BATCH_NORM, BATCH_NORM_EVAL, LAYER_NORM, offered
from ...precision import autocast_inputs
from .windows import check_min_rank

#: machine epsilon per float dtype: rms_norm's default eps, as in PyTorch
_EPS = {"float16": 2.0**-10, "float32": 2.0**-23, "float64": 2.0**-52}


def _check_affine(weight: Tensor | None, bias: Tensor | None, shape: tuple[int, ...],
                  op: str) -> None:
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (not isinstance(t, Tensor) or t.shape != shape):
            raise ShapeError(f"{op}: {name} must have shape {shape}, got "
                             f"{getattr(t, 'shape', t)}")


def _affine(y: Tensor, weight: Tensor | None, bias: Tensor | None, shape: tuple[int, ...],
            view: tuple[int, ...], op: str) -> Tensor:
    """``y * weight + bias`` with each (of `shape`, if given) reshaped to `view`."""
    _check_affine(weight, bias, shape, op)
    if weight is not None:
        y = y * weight.reshape(view)
    if bias is not None:
        y = y + bias.reshape(view)
    return y


def _floating(x: Tensor, op: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise ArgumentError(f"{op} expects a tensor, got {type(x).__name__}")
    (x,) = autocast_inputs(op, x)
    return x if x.dtype.is_floating_point else x.float()


def _update(running: Tensor, batch_stat: Tensor, momentum: float) -> None:
    """running := (1 - momentum) * running + momentum * batch_stat, in place, unrecorded."""
    running.assign_(running * (1.0 - momentum) + batch_stat.detach() * momentum)


def _check_running(running: Tensor | None, channels: int, name: str, op: str) -> None:
    if running is not None and (not isinstance(running, Tensor) or
                                running.shape != (channels,)):
        raise ShapeError(f"{op}: {name} must have shape ({channels},), got "
                         f"{getattr(running, 'shape', running)}")


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each channel (dim 1) of input (N, C, ...) to zero mean and unit variance,
    then scale by `weight` and shift by `bias` (both (C,)).

    Training (or no running statistics): the batch's own mean and biased variance are used,
    and running_mean/running_var, when given, are updated in place with the batch mean and
    unbiased variance. Evaluation: the running statistics are used.

    >>> import pyburn, pyburn.nn.functional as F
    >>> x = pyburn.tensor([[1.0], [3.0]], device="flex")
    >>> mean, var = pyburn.zeros(1, device="flex"), pyburn.ones(1, device="flex")
    >>> y = F.batch_norm(x, mean, var, training=True, momentum=0.5)
    >>> [round(v, 3) for v in y.reshape(-1).tolist()]
    [-1.0, 1.0]
    >>> mean.tolist(), var.tolist()
    ([1.0], [1.5])
    """
    op = "batch_norm"
    check_min_rank(input, 2, op, "N, C, ...")
    x = _floating(input, op)
    channels = x.shape[1]
    _check_running(running_mean, channels, "running_mean", op)
    _check_running(running_var, channels, "running_var", op)
    view = (channels,) + (1,) * (x.ndim - 2)
    dims = (0,) + tuple(range(2, x.ndim))
    if training or running_mean is None or running_var is None:
        if not training and (running_mean is not None or running_var is not None):
            raise ArgumentError(f"{op}: evaluation needs both running_mean and running_var")
        count = x.numel() // max(channels, 1)
        if training and count <= 1:
            raise ArgumentError(f"{op}: training needs more than one value per channel, got "
                                f"input shape {x.shape}")
        _check_affine(weight, bias, (channels,), op)
        if offered(BATCH_NORM, x, *(t for t in (weight, bias) if t is not None)):
            y, mean, var = capability.batch_norm(x, weight, bias, eps)
        else:
            mean = x.mean(dims, keepdim=True)
            var = x.var(dims, keepdim=True, correction=0)
            y = _affine((x - mean) * (var + eps).rsqrt(), weight, bias, (channels,), view, op)
        if training and running_mean is not None:
            _update(running_mean, mean.reshape(channels), momentum)
        if training and running_var is not None:
            _update(running_var, var.reshape(channels) * (count / (count - 1)), momentum)
        return y
    # as one scale and one shift per channel (computed on the C statistics, not on x), so
    # that x is read twice instead of four times: PyTorch's evaluation computes it so too
    _check_affine(weight, bias, (channels,), op)
    affine = tuple(t for t in (weight, bias) if t is not None)
    if (offered(BATCH_NORM_EVAL, x, running_mean, running_var, *affine)
            and not (running_mean.requires_grad or running_var.requires_grad)):
        return capability.batch_norm_eval(x, running_mean, running_var, weight, bias, eps)
    scale = (running_var + eps).rsqrt()
    if weight is not None:
        scale = scale * weight
    shift = -running_mean * scale if bias is None else bias - running_mean * scale
    return x * scale.reshape(view) + shift.reshape(view)


def instance_norm(input: Tensor, running_mean: Tensor | None = None,
                  running_var: Tensor | None = None, weight: Tensor | None = None,
                  bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each channel of each sample of input (N, C, *spatial) over its spatial
    dims. With `use_input_stats` False the running statistics are used instead (as
    `batch_norm` in evaluation); with it True, given running tensors are updated in place
    with the batch average of the per-instance mean and unbiased variance."""
    op = "instance_norm"
    check_min_rank(input, 3, op, "N, C, *spatial")
    x = _floating(input, op)
    n, channels = x.shape[:2]
    _check_running(running_mean, channels, "running_mean", op)
    _check_running(running_var, channels, "running_var", op)
    view = (channels,) + (1,) * (x.ndim - 2)
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise ArgumentError(f"{op}: use_input_stats=False needs running_mean and "
                                "running_var")
        return batch_norm(x, running_mean, running_var, weight, bias, False, momentum, eps)
    dims = tuple(range(2, x.ndim))
    count = x.numel() // max(n * channels, 1)
    if count <= 1:
        raise ArgumentError(f"{op}: needs more than one spatial value per channel, got input "
                            f"shape {x.shape}")
    mean = x.mean(dims, keepdim=True)
    var = x.var(dims, keepdim=True, correction=0)
    if running_mean is not None:
        _update(running_mean, mean.reshape(n, channels).mean(0), momentum)
    if running_var is not None:
        unbiased = var.reshape(n, channels).mean(0) * (count / (count - 1))
        _update(running_var, unbiased, momentum)
    y = (x - mean) * (var + eps).rsqrt()
    return _affine(y, weight, bias, (channels,), view, op)


def _trailing(x: Tensor, normalized_shape: int | Sequence[int], op: str) -> tuple[int, ...]:
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(shape)
    if k == 0 or k > x.ndim or x.shape[x.ndim - k:] != shape:
        raise ShapeError(f"{op}: normalized_shape {shape} must be the trailing dims of the "
                         f"input shape {x.shape}")
    return shape


def layer_norm(input: Tensor, normalized_shape: int | Sequence[int],
               weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Normalise over the trailing dims `normalized_shape` (mean 0, biased variance 1), then
    scale by `weight` and shift by `bias`, both of that shape.

    >>> import pyburn, pyburn.nn.functional as F
    >>> x = pyburn.tensor([[1.0, 3.0]], device="flex")
    >>> [round(v, 3) for v in F.layer_norm(x, 2)[0].tolist()]
    [-1.0, 1.0]
    """
    x = _floating(input, "layer_norm")
    shape = _trailing(x, normalized_shape, "layer_norm")
    _check_affine(weight, bias, shape, "layer_norm")
    if offered(LAYER_NORM, x, *(t for t in (weight, bias) if t is not None)):
        return capability.layer_norm(x, weight, bias, len(shape), eps)
    dims = tuple(range(x.ndim - len(shape), x.ndim))
    mean = x.mean(dims, keepdim=True)
    y = (x - mean) * (x.var(dims, keepdim=True, correction=0) + eps).rsqrt()
    return _affine(y, weight, bias, shape, shape, "layer_norm")


def rms_norm(input: Tensor, normalized_shape: int | Sequence[int], weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    """``x / sqrt(mean(x^2) + eps) * weight`` over the trailing dims `normalized_shape`;
    `eps` defaults to the dtype's machine epsilon."""
    x = _floating(input, "rms_norm")
    shape = _trailing(x, normalized_shape, "rms_norm")
    dims = tuple(range(x.ndim - len(shape), x.ndim))
    eps = _EPS[x.dtype.name] if eps is None else eps
    y = x * ((x * x).mean(dims, keepdim=True) + eps).rsqrt()
    return _affine(y, weight, None, shape, shape, "rms_norm")


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Split the channels of input (N, C, ...) into `num_groups` groups and normalise each
    group of each sample; `weight` and `bias` are per channel (C,)."""
    op = "group_norm"
    check_min_rank(input, 2, op, "N, C, ...")
    x = _floating(input, op)
    n, channels = x.shape[:2]
    if not isinstance(num_groups, int) or num_groups <= 0 or channels % num_groups:
        raise ShapeError(f"{op}: {channels} channels (input shape {x.shape}) are not divisible "
                         f"into num_groups={num_groups!r} groups")
    grouped = x.reshape(n, num_groups, x.numel() // max(n * num_groups, 1))
    mean = grouped.mean(2, keepdim=True)
    y = (grouped - mean) * (grouped.var(2, keepdim=True, correction=0) + eps).rsqrt()
    view = (channels,) + (1,) * (x.ndim - 2)
    return _affine(y.reshape(x.shape), weight, bias, (channels,), view, op)


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    """x divided by its p-norm along `dim`, the norm clamped below at `eps`.

    >>> import pyburn, pyburn.nn.functional as F
    >>> F.normalize(pyburn.tensor([[3.0, 4.0]], device="flex")).tolist()
    [[0.6000000238418579, 0.800000011920929]]
    """
    x = _floating(input, "normalize")
    return x / x.norm(p, dim, keepdim=True).clamp(min=eps)
