"""The agents' default networks: multilayer perceptrons whose weights are drawn from the run's
own generator, so that a seed fixes them without touching ``pyburn.manual_seed``'s.

Weights are orthogonal (`pyburn.nn.init.orthogonal_`), with gain sqrt(2) in the hidden
layers and a gain chosen per output, and biases are zero: the initialisation PPO's
implementations use (Engstrom et al., 2020, "Implementation Matters in Deep Policy
Gradients"; Huang et al., 2022, "The 37 Implementation Details of PPO"), and a sound one for
DQN's Q network as well.

>>> import pyburn
>>> net = mlp([4, 8, 2], pyburn.nn.Tanh, output_gain=1.0, device="flex",
...           generator=pyburn.Generator(0))
>>> net(pyburn.ones(3, 4, device="flex")).shape
(3, 2)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from ..errors import ArgumentError
from ..nn import Linear, Module, Sequential, init
from ..ops.creation import DeviceLike
from ..random import Generator

#: the gain of the hidden layers' weights, suited to ReLU and tanh alike
HIDDEN_GAIN = math.sqrt(2.0)


def mlp(sizes: Sequence[int], activation: Callable[[], Module], *, output_gain: float,
        device: DeviceLike, generator: Generator) -> Sequential:
    """Linear layers from ``sizes[0]`` inputs through the hidden widths to ``sizes[-1]``
    outputs, with an `activation` after each hidden layer; orthogonal weights of gain
    sqrt(2) (the last layer's: `output_gain`) drawn from `generator`, biases zero."""
    if len(sizes) < 2 or any(not isinstance(n, int) or n < 1 for n in sizes):
        raise ArgumentError(f"an MLP takes at least two positive sizes, got {list(sizes)!r}")
    layers: list[Module] = []
    last = len(sizes) - 2
    for k, (inputs, outputs) in enumerate(zip(sizes, sizes[1:])):
        linear = Linear(inputs, outputs, device=device)
        init.orthogonal_(linear.weight, output_gain if k == last else HIDDEN_GAIN, generator)
        init.zeros_(linear.bias)
        layers.append(linear)
        if k != last:
            layers.append(activation())
    return Sequential(*layers)
