"""`Embedding`: a learned lookup table from integer ids to vectors."""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from ..errors import ArgumentError, ShapeError
from ..tape import no_grad
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter, empty_parameter


class Embedding(Module):
    """Rows of `weight` (num_embeddings, embedding_dim) picked by integer ids of any shape:
    (*) -> (*, embedding_dim). Initialised from N(0, 1), the `padding_idx` row (if any) set
    to zeros and kept out of the gradient.

    >>> import pyburn
    >>> emb = pyburn.nn.Embedding(10, 3, padding_idx=0, device="flex")
    >>> emb(pyburn.tensor([[0, 4], [9, 1]], device="flex")).shape
    (2, 2, 3)
    >>> emb.weight[0].tolist()
    [0.0, 0.0, 0.0]
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0,
                 scale_grad_by_freq: bool = False, sparse: bool = False,
                 _weight: Tensor | None = None, _freeze: bool = False, device: Any = None,
                 dtype: Any = None):
        super().__init__()
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ArgumentError(f"Embedding: padding_idx {padding_idx} is out of range for "
                                    f"{num_embeddings} embeddings")
            padding_idx %= num_embeddings
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse
        if _weight is None:
            self.weight = empty_parameter((num_embeddings, embedding_dim), device, dtype)
            self.reset_parameters()
        elif _weight.shape != (num_embeddings, embedding_dim):
            raise ShapeError(f"Embedding: _weight has shape {_weight.shape}, expected "
                             f"{(num_embeddings, embedding_dim)}")
        else:  # given values (PyTorch's private argument, used by from_pretrained)
            self.weight = Parameter(_weight.detach(), requires_grad=not _freeze)

    def reset_parameters(self) -> None:
        """N(0, 1) entries, the padding row zero."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx] = 0.0

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True,
                        padding_idx: int | None = None, max_norm: float | None = None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        sparse: bool = False) -> Embedding:
        """An Embedding holding `embeddings` (2-d) as its weight, on its device; `freeze`
        keeps the weight from requiring grad."""
        if not isinstance(embeddings, Tensor) or embeddings.ndim != 2:
            raise ShapeError(f"Embedding.from_pretrained needs a 2-d tensor, got "
                             f"{getattr(embeddings, 'shape', embeddings)}")
        rows, dim = embeddings.shape
        return cls(rows, dim, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse,
                   _weight=embeddings, _freeze=freeze)

    def forward(self, input: Tensor) -> Tensor:
        """The embedding vectors of the ids in `input`."""
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self) -> str:
        text = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            text += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            text += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            text += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq:
            text += ", scale_grad_by_freq=True"
        if self.sparse:
            text += ", sparse=True"
        return text
