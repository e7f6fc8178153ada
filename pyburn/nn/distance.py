"""Distance modules: `PairwiseDistance` and `CosineSimilarity`."""

from __future__ import annotations

from .._tensor import Tensor
from . import functional as F
from .module import Module


class PairwiseDistance(Module):
    """p-norm distance between the last dims of two inputs."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
        super().__init__()
        self.norm = p  # PyTorch's attribute name
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        """The distances."""
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class CosineSimilarity(Module):
    """Cosine of the angle between two inputs along `dim`."""

    def __init__(self, dim: int = 1, eps: float = 1e-8):
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        """The similarities."""
        return F.cosine_similarity(x1, x2, self.dim, self.eps)
