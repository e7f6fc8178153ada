"""QuantScheme: validation, presets, and scales and zero points against onnxruntime's
``compute_scale_zp`` (bit for bit) and PyTorch's observers (torch.ao, with the options that
make the same choice: scales within one float32 ulp, zero points equal)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from onnxruntime.quantization.quant_utils import compute_scale_zp, get_qmin_qmax_for_qType
from torch.ao.quantization import MinMaxObserver, PerChannelMinMaxObserver

from pyburn.errors import ArgumentError
from pyburn.quant import PRESETS, QuantScheme
from pyburn.quant.scheme import f32

from .references import ONNX_TYPES

RNG = np.random.default_rng(7)
#: ranges of every kind: both signs, all positive, all negative, tiny, all zero
LOWS = np.concatenate([RNG.uniform(-3, 0, 40), RNG.uniform(0.1, 1, 5), [-1e-3, 0.0, -2.0, 0.0,
                                                                      -1e-40]]).astype(np.float32)
HIGHS = np.concatenate([RNG.uniform(0, 5, 40), RNG.uniform(1, 2, 5), [-1e-4, 0.0, -0.5, 1e-39,
                                                                     0.0]]).astype(np.float32)
SCHEMES = [QuantScheme(dtype, symmetric, "tensor") for dtype in ("int8", "uint8", "int4", "uint4")
           for symmetric in (True, False)]


@pytest.mark.parametrize("scheme", SCHEMES, ids=QuantScheme.describe)
def test_scales_and_zero_points_equal_onnxruntimes(scheme):
    scales, zeros = scheme.qparams(LOWS.tolist(), HIGHS.tolist())
    qmin, qmax = get_qmin_qmax_for_qType(ONNX_TYPES[scheme.dtype], symmetric=scheme.symmetric)
    for i, (low, high) in enumerate(zip(LOWS, HIGHS)):
        zero, scale = compute_scale_zp(low, high, qmin, qmax, scheme.symmetric)
        assert np.float32(scales[i]) == scale, (low, high)
        assert (0 if zeros is None else zeros[i]) == int(zero), (low, high)


#: (pyburn's scheme, torch dtype, qscheme, quant_min/max options)
TORCH = [
    (QuantScheme("int8", True, "tensor"), torch.qint8, torch.per_tensor_symmetric,
     {"quant_min": -127, "quant_max": 127}),
    (QuantScheme("uint8", True, "tensor"), torch.quint8, torch.per_tensor_symmetric, {}),
    (QuantScheme("int8", False, "tensor"), torch.qint8, torch.per_tensor_affine, {}),
    (QuantScheme("uint8", False, "tensor"), torch.quint8, torch.per_tensor_affine, {}),
    (QuantScheme("int8", True, "channel"), torch.qint8, torch.per_channel_symmetric,
     {"quant_min": -127, "quant_max": 127}),
    (QuantScheme("uint8", False, "channel"), torch.quint8, torch.per_channel_affine, {}),
    (QuantScheme("int4", True, "channel"), torch.qint8, torch.per_channel_symmetric,
     {"quant_min": -8, "quant_max": 7}),
    (QuantScheme("uint4", False, "channel"), torch.quint8, torch.per_channel_affine,
     {"quant_min": 0, "quant_max": 15}),
]


@pytest.mark.parametrize("scheme, dtype, qscheme, options", TORCH,
                         ids=[s.describe() for s, *_ in TORCH])
def test_scales_and_zero_points_equal_torch_observers(scheme, dtype, qscheme, options):
    weight = torch.from_numpy(RNG.standard_normal((16, 24)).astype(np.float32))
    weight[3] *= 100
    weight[5] = weight[5].abs() + 0.5  # a channel with no negative value
    if scheme.granularity == "channel":
        observer = PerChannelMinMaxObserver(0, dtype=dtype, qscheme=qscheme, **options)
        low, high = weight.amin(1).tolist(), weight.amax(1).tolist()
    else:
        observer = MinMaxObserver(dtype=dtype, qscheme=qscheme, **options)
        low, high = [weight.min().item()], [weight.max().item()]
    observer(weight)
    want_scale, want_zero = observer.calculate_qparams()
    scales, zeros = scheme.qparams(low, high)
    ulp = np.spacing(np.float32(want_scale.numpy()))
    assert np.all(np.abs(np.float32(scales) - want_scale.numpy()) <= ulp)
    assert (zeros or [0] * len(scales)) == want_zero.tolist()


def test_torchs_default_symmetric_int8_divides_by_127_5_where_pyburn_divides_by_127():
    observer = MinMaxObserver(dtype=torch.qint8, qscheme=torch.per_tensor_symmetric)
    observer(torch.tensor([-2.55, 1.0]))
    scales, _ = QuantScheme("int8", True, "tensor").qparams([-2.55], [1.0])
    assert observer.calculate_qparams()[0].item() == pytest.approx(2.55 / 127.5)
    assert scales[0] == f32(f32(2.55) / 127)


def test_presets_and_properties():
    assert PRESETS["INT4_BLOCK32"] == QuantScheme("int4", True, "block", 32)
    assert QuantScheme("int4", granularity="block").block_size == 32
    scheme = QuantScheme("uint4", False, "block", 64)
    assert (scheme.bits, scheme.signed, scheme.per_word, scheme.type_range) == (4, False, 8,
                                                                               (0, 15))
    assert scheme.scale_shape(3, 65) == (3, 2) and scheme.has_zero_point
    assert QuantScheme("int8").qrange == (-127, 127)
    assert QuantScheme.from_dict(scheme.to_dict()) == scheme
    assert scheme.describe() == "uint4 asymmetric block 64"


@pytest.mark.parametrize("fields, message", [
    ({"dtype": "int16"}, "dtype must be one of"),
    ({"dtype": "int8", "symmetric": 1}, "symmetric must be a bool"),
    ({"granularity": "row"}, "granularity must be one of"),
    ({"granularity": "channel", "block_size": 32}, "only for granularity='block'"),
    ({"granularity": "block", "block_size": 12}, "multiple of 8"),
    ({"granularity": "block", "block_size": 0}, "multiple of 8"),
])
def test_a_scheme_that_makes_no_sense_is_refused(fields, message):
    with pytest.raises(ArgumentError, match=message):
        QuantScheme(**fields)


def test_a_range_that_is_not_finite_is_refused():
    with pytest.raises(ArgumentError, match="not finite"):
        QuantScheme().qparams([float("nan")], [1.0])
    with pytest.raises(ArgumentError, match="not finite"):
        QuantScheme().qparams([0.0], [1e300])
    with pytest.raises(ArgumentError, match="2 minimums for 1 maximums"):
        QuantScheme().qparams([0.0, 1.0], [1.0])
    with pytest.raises(ArgumentError, match="not a quantization scheme"):
        QuantScheme.from_dict({"dtype": "int8", "bits": 8})
