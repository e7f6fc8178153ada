"""`ActorCritic`: a stochastic policy over a discrete action space (the actor's logits) and
its value function (the critic), the networks PPO trains; and the categorical distribution
over the logits: `sample_actions` and `log_prob_and_entropy`.

Actions are drawn by the Gumbel-max trick: ``argmax(logits + g)``, with ``g = -log(-log u)``
and ``u`` uniform from the run's generator, picks action ``a`` with probability
``softmax(logits)[a]`` (Gumbel, 1954; Maddison et al., 2014): one draw per action and one
argmax, on the device, for a whole batch.

>>> import pyburn
>>> policy = ActorCritic.mlp(4, 2, device="flex", generator=pyburn.Generator(0))
>>> logits, values = policy(pyburn.zeros(3, 4, device="flex"))
>>> logits.shape, values.shape
((3, 2), (3,))
>>> sample_actions(logits, pyburn.Generator(1)).shape
(3,)
"""

from __future__ import annotations

from collections.abc import Sequence

from .._tensor import Tensor
from ..nn import Module, Tanh
from ..nn import functional as F
from ..ops.creation import DeviceLike
from ..ops.random_tensors import rand
from ..random import Generator
from .networks import mlp

#: the gains of the last layers' weights: a near-uniform first policy, values of unit scale
ACTOR_GAIN, CRITIC_GAIN = 0.01, 1.0


class ActorCritic(Module):
    """`actor` maps observations (batch, ...) to action logits (batch, actions); `critic`
    maps them to values (batch, 1). Calling it gives both: (logits, values of shape
    (batch,))."""

    def __init__(self, actor: Module, critic: Module):
        super().__init__()
        self.actor = actor
        self.critic = critic

    @classmethod
    def mlp(cls, observation_size: int, actions: int, *, hidden: Sequence[int] = (64, 64),
            device: DeviceLike = None, generator: Generator | None = None) -> ActorCritic:
        """Separate tanh MLPs for the actor and the critic (`networks.mlp`: orthogonal
        weights; the actor's last layer of gain 0.01, so that the first policy is close to
        uniform, the critic's of gain 1)."""
        generator = Generator() if generator is None else generator
        actor = mlp([observation_size, *hidden, actions], Tanh, output_gain=ACTOR_GAIN,
                    device=device, generator=generator)
        critic = mlp([observation_size, *hidden, 1], Tanh, output_gain=CRITIC_GAIN,
                     device=device, generator=generator)
        return cls(actor, critic)

    def forward(self, observations: Tensor) -> tuple[Tensor, Tensor]:
        """The action logits and the values of a batch of observations."""
        return self.actor(observations), self.values(observations)

    def values(self, observations: Tensor) -> Tensor:
        """The critic's values of a batch of observations, shape (batch,)."""
        return self.critic(observations).squeeze(-1)


def sample_actions(logits: Tensor, generator: Generator) -> Tensor:
    """An action per row of `logits` (batch, actions), drawn with probabilities
    ``softmax(logits)`` by the Gumbel-max trick; int32, shape (batch,)."""
    uniform = rand(logits.shape, dtype=logits.dtype, device=logits.device, generator=generator)
    gumbel = -(-uniform.log()).log()  # u = 0 gives -inf: that action is never picked
    return (logits.detach() + gumbel).argmax(-1)


def log_prob_and_entropy(logits: Tensor, actions: Tensor) -> tuple[Tensor, Tensor]:
    """The log-probabilities of `actions` (batch,) under ``softmax(logits)`` and the
    distributions' entropies, both of shape (batch,)."""
    log_p = F.log_softmax(logits, dim=-1)
    chosen = log_p.gather(-1, actions.unsqueeze(-1)).squeeze(-1)
    return chosen, -(log_p.exp() * log_p).sum(-1)
