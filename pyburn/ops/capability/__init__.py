"""Optional capabilities: composite ops a backend may run as one call. `CAPABILITIES` is
their one table: each `Capability` record holds the backend methods it obliges and their
contract, the composite that runs otherwise, the backward rule of each op it records and
the ONNX operators the exporter writes those as; each module here holds a family's
records, the wrappers the composites call when `offered` says a backend runs them, and the
rules.

A backend that lists a capability in its ``caps`` implements its methods (the cpu backend:
``pyburn/backends/cpu/conv.py``, ``fused.py``, ``activations.py`` and its own ``linear``;
wgpu: ``pyburn/backends/wgpu/capabilities.py``). Each op is one recorded node whose backward rule is
written with tensor ops, so gradients of gradients work. Arguments are checked by the
callers; `offered` is the one place that decides between a capability and the composite.

>>> from pyburn.ops.capability import CAPABILITIES
>>> CAPABILITIES["conv"].methods
('conv', 'conv_transpose', 'conv_weight')
"""

from __future__ import annotations

from ... import capture
from ...tape import Rule
from .activation import ACTIVATION, activation
from .affine import LINEAR, linear
from .convolution import CONV, CONV_ACTIVATION, CONV_BIAS, conv, conv_transpose, conv_weight
from .loss import NLL_LOSS, nll_loss, nll_loss_grad
from .optimizer import ADAM, adam
from .pooling import AVG_POOL, MAX_POOL, avg_pool, max_pool
from .quantized import QUANT_MATMUL
from .record import Capability, offered
from .rows import (
    BATCH_NORM,
    BATCH_NORM_EVAL,
    LAYER_NORM,
    SOFTMAX,
    batch_norm,
    batch_norm_eval,
    layer_norm,
    softmax,
)

#: every capability, by the name a backend lists in its ``caps``
CAPABILITIES: dict[str, Capability] = {c.name: c for c in (
    CONV, CONV_BIAS, CONV_ACTIVATION, MAX_POOL, AVG_POOL, SOFTMAX, LAYER_NORM, BATCH_NORM,
    BATCH_NORM_EVAL, LINEAR, NLL_LOSS, ADAM, QUANT_MATMUL, ACTIVATION)}
# a captured run (pyburn.capture) replays the capabilities' methods as the protocol's
capture.replayable(method for c in CAPABILITIES.values() for method in c.methods)
#: the backward rule of every op the capabilities record
RULES: dict[str, Rule] = {op: rule for c in CAPABILITIES.values() for op, rule in c.rules.items()}
#: the capability each recorded op belongs to
CAPABILITY_OF: dict[str, Capability] = {op: c for c in CAPABILITIES.values() for op in c.rules}

__all__ = ["ACTIVATION", "ADAM", "AVG_POOL", "BATCH_NORM", "BATCH_NORM_EVAL", "CAPABILITIES",
           "CAPABILITY_OF",
           "CONV", "CONV_ACTIVATION", "CONV_BIAS", "LAYER_NORM", "LINEAR", "MAX_POOL", "NLL_LOSS",
           "QUANT_MATMUL",
           "RULES", "SOFTMAX", "Capability",
           "activation", "adam", "avg_pool", "batch_norm", "batch_norm_eval", "conv",
           "conv_transpose",
           "conv_weight", "layer_norm", "linear", "max_pool", "nll_loss", "nll_loss_grad",
           "offered", "softmax"]
