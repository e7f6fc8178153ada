"""Which layers ``quantize`` and ``calibrate`` work on: `targets` and `skip` by dotted name
(a name holds everything inside it) and by type."""

from __future__ import annotations

from pyburn import nn, quant
from pyburn.quant.selection import select

from .test_module import SmallCNN


def test_targets_and_skip_pick_layers_by_name_and_type():
    model = SmallCNN("flex")
    quant.quantize(model, targets=["head"], skip=["head.2"])
    kinds = {name: type(m).__name__ for name, m in model.named_modules() if name}
    assert (kinds["conv"], kinds["features.1"], kinds["head.0"], kinds["head.2"]) == (
        "Conv2d", "Conv1d", "QuantizedLinear", "Linear")
    model = quant.quantize(SmallCNN("flex"), targets=[nn.Conv2d, nn.Conv1d])
    assert [type(m).__name__ for m in model.modules() if isinstance(m, quant.QuantizedLayer)] \
        == ["QuantizedConv2d", "QuantizedConv1d"]
    model = quant.quantize(SmallCNN("flex"), skip=[nn.Linear, "conv"])
    assert type(model.features[1]).__name__ == "QuantizedConv1d"
    assert type(model.conv) is nn.Conv2d


def test_select_lists_the_layers_in_model_order():
    assert [name for name, _ in select(SmallCNN("flex"))] == ["conv", "features.1", "head.0",
                                                              "head.2"]
    assert [name for name, _ in select(SmallCNN("flex"), targets="features")] == ["features.1"]
