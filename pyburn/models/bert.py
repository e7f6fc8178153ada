"""BERT encoders (Devlin et al., 2018) and the sentence embeddings made from them, as
sentence-transformers' all-MiniLM-L6-v2 makes them (Reimers and Gurevych, 2019).

`BertModel` maps token ids to the last layer's hidden states. Its modules carry Hugging Face
``transformers``' names (``embeddings.word_embeddings``, ``encoder.layer.0.attention.self.
query``, ``pooler.dense``, ...), so that a ``model.safetensors`` or ``pytorch_model.bin``
from the Hub loads with no renaming; `BertConfig.from_json` reads the ``config.json`` next to
it. `SentenceEncoder` is the same network whose output is the mean of its hidden states over
the real (unpadded) tokens, L2-normalised: one vector per sentence. Tokenizing is not done
here: the models take token ids, as the publisher's tokenizer gives them.

>>> import pyburn
>>> config = BertConfig(vocab_size=50, hidden_size=8, num_hidden_layers=1,
...                     num_attention_heads=2, intermediate_size=16)
>>> encoder = SentenceEncoder(config, device="flex").eval()
>>> ids = pyburn.tensor([[2, 7, 9], [2, 5, 0]], device="flex")
>>> mask = pyburn.tensor([[1, 1, 1], [1, 1, 0]], device="flex")
>>> encoder(ids, mask).shape
(2, 8)
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields, replace
from functools import partial
from typing import Any

from .._tensor import Tensor
from ..errors import ArgumentError, DTypeError, ShapeError
from ..nn import functional as F
from ..nn.containers import ModuleList
from ..nn.dropout import Dropout
from ..nn.embedding import Embedding
from ..nn.linear import Linear
from ..nn.module import Module
from ..nn.normalization import LayerNorm
from ..ops.creation import arange, zeros_like
from ..store.lazy import key_predicate
from .registry import ModelEntry, register

#: transformers' names of the activations between the feed-forward layers
ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {
    "gelu": F.gelu,
    "gelu_new": partial(F.gelu, approximate="tanh"),
    "relu": F.relu,
}

#: the most negative finite value of each float dtype: transformers adds it to the attention
#: scores of padded keys (``torch.finfo(dtype).min``), which the softmax turns into zero
#: weights. Not -inf, as transformers: a sequence that is all padding then gets the same
#: (uniform) weights as there, where -inf would give it none
_LOWEST = {"float16": -65504.0, "float32": -3.4028234663852886e38,
           "float64": -sys.float_info.max}

#: keys of transformers' files that hold no weight of the encoder, left out when loading:
#: the ``position_ids`` buffer that transformers saved before version 4.31 (all-MiniLM-L6-v2's
#: files have it), and the pre-training heads of Google's checkpoints (``cls.predictions``,
#: ``cls.seq_relationship``: bert-base-uncased's file is a BertForPreTraining's)
_IGNORED = re.compile(r"^(embeddings\.position_ids|cls\..*)$")

#: from the keys of transformers' files to `BertModel`'s: a task model's ``bert.`` prefix
#: (BertForPreTraining, BertForSequenceClassification, ...), and the ``gamma``/``beta`` names
#: of layer norms in checkpoints converted from TensorFlow
KEY_REMAP = ((r"^bert\.", ""), (r"LayerNorm\.gamma$", "LayerNorm.weight"),
             (r"LayerNorm\.beta$", "LayerNorm.bias"))


@dataclass(frozen=True)
class BertConfig:
    """The sizes of a BERT encoder, with transformers' names and BERT base's values as
    defaults (``BertConfig()`` is bert-base-uncased's configuration)."""

    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    #: one of `ACTIVATIONS`
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 0

    def __post_init__(self) -> None:
        for name in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                     "intermediate_size", "max_position_embeddings", "type_vocab_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ArgumentError(f"BertConfig: {name} must be a positive int, got {value!r}")
        if self.hidden_size % self.num_attention_heads:
            raise ArgumentError(f"BertConfig: hidden_size ({self.hidden_size}) must be "
                                f"divisible by num_attention_heads ({self.num_attention_heads})")
        if self.hidden_act not in ACTIVATIONS:
            raise ArgumentError(f"BertConfig: hidden_act {self.hidden_act!r} is not one of "
                                f"{', '.join(ACTIVATIONS)}")

    @classmethod
    def from_json(cls, source: str | os.PathLike[str] | Mapping[str, Any]) -> BertConfig:
        """The configuration in a transformers ``config.json`` (a path, or the parsed
        dict): its fields of this class, the others ignored. A model that is not a BERT
        (``model_type``) or whose position embeddings are not absolute is refused with
        `ArgumentError`.

        >>> BertConfig.from_json({"model_type": "bert", "hidden_size": 384,
        ...                       "architectures": ["BertModel"]}).hidden_size
        384
        """
        if isinstance(source, Mapping):
            data = dict(source)
        else:
            with open(source, encoding="utf-8") as file:
                data = json.load(file)
        if data.get("model_type", "bert") != "bert":
            raise ArgumentError(f"BertConfig.from_json: the configuration is a "
                                f"{data['model_type']!r} model's, not a BERT's")
        if data.get("position_embedding_type", "absolute") != "absolute":
            raise ArgumentError("BertConfig.from_json: only absolute position embeddings are "
                                f"supported, not {data['position_embedding_type']!r}")
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


#: all-MiniLM-L6-v2 (Wang et al.'s MiniLM distilled to 6 layers, then trained on sentence pairs)
MINILM_L6 = BertConfig(hidden_size=384, num_hidden_layers=6, intermediate_size=1536)


def _check_tokens(tokens: Tensor, name: str, shape: tuple[int, ...] | None = None) -> None:
    """`tokens` is a tensor of shape (batch, sequence), or `shape` (input_ids') when given."""
    if not isinstance(tokens, Tensor):
        raise ArgumentError(f"BertModel: {name} must be a tensor, got {type(tokens).__name__}")
    if shape is None and tokens.ndim != 2:
        raise ShapeError(f"BertModel: {name} must have shape (batch, sequence), got "
                         f"{tokens.shape}")
    if shape is not None and tokens.shape != shape:
        raise ShapeError(f"BertModel: {name} must have input_ids' shape {shape}, got "
                         f"{tokens.shape}")


class BertEmbeddings(Module):
    """The sum of a token's word, position and segment (token type) embeddings,
    layer-normalised."""

    def __init__(self, config: BertConfig, device: Any = None, dtype: Any = None):
        super().__init__()
        self.word_embeddings = Embedding(config.vocab_size, config.hidden_size,
                                         padding_idx=config.pad_token_id, device=device,
                                         dtype=dtype)
        self.position_embeddings = Embedding(config.max_position_embeddings,
                                             config.hidden_size, device=device, dtype=dtype)
        self.token_type_embeddings = Embedding(config.type_vocab_size, config.hidden_size,
                                               device=device, dtype=dtype)
        self.LayerNorm = LayerNorm(config.hidden_size, eps=config.layer_norm_eps,
                                   device=device, dtype=dtype)
        self.dropout = Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids: Tensor, token_type_ids: Tensor, position_ids: Tensor) -> Tensor:
        """(N, L, hidden) for the ids (N, L) of tokens, segments and positions (positions
        may be (L,), the same for every sequence)."""
        x = (self.word_embeddings(input_ids) + self.position_embeddings(position_ids)
             + self.token_type_embeddings(token_type_ids))
        return self.dropout(self.LayerNorm(x))


class BertSelfAttention(Module):
    """Multi-head self-attention: the query, key and value projections, and each head's
    ``softmax(q k^T / sqrt(head size) + bias) v``, the heads concatenated."""

    def __init__(self, config: BertConfig, device: Any = None, dtype: Any = None):
        super().__init__()
        hidden = config.hidden_size
        self.num_attention_heads = config.num_attention_heads
        self.attention_head_size = hidden // config.num_attention_heads
        self.attention_probs_dropout_prob = config.attention_probs_dropout_prob
        self.query = Linear(hidden, hidden, device=device, dtype=dtype)
        self.key = Linear(hidden, hidden, device=device, dtype=dtype)
        self.value = Linear(hidden, hidden, device=device, dtype=dtype)

    def forward(self, hidden: Tensor, bias: Tensor | None) -> Tensor:
        """(N, L, hidden) attended; `bias` (N, 1, 1, L), if any, is added to every head's
        scores."""
        n, length, width = hidden.shape

        def heads(x: Tensor) -> Tensor:  # (N, L, hidden) -> (N, heads, L, head size)
            return x.reshape(n, length, self.num_attention_heads,
                             self.attention_head_size).transpose(1, 2)

        context = F.scaled_dot_product_attention(
            heads(self.query(hidden)), heads(self.key(hidden)), heads(self.value(hidden)),
            attn_mask=bias, dropout_p=self.attention_probs_dropout_prob if self.training else 0.0)
        return context.transpose(1, 2).reshape(n, length, width)


class BertResidualOutput(Module):
    """``LayerNorm(dropout(dense(x)) + residual)``: what follows the attention
    (transformers' BertSelfOutput) and the feed-forward layer (BertOutput) alike."""

    def __init__(self, in_features: int, config: BertConfig, device: Any = None,
                 dtype: Any = None):
        super().__init__()
        self.dense = Linear(in_features, config.hidden_size, device=device, dtype=dtype)
        self.LayerNorm = LayerNorm(config.hidden_size, eps=config.layer_norm_eps,
                                   device=device, dtype=dtype)
        self.dropout = Dropout(config.hidden_dropout_prob)

    def forward(self, x: Tensor, residual: Tensor) -> Tensor:
        """The projected `x` added to `residual`, layer-normalised."""
        return self.LayerNorm(self.dropout(self.dense(x)) + residual)


class BertAttention(Module):
    """Self-attention (`self`) and its residual output (`output`)."""

    def __init__(self, config: BertConfig, device: Any = None, dtype: Any = None):
        super().__init__()
        self.self = BertSelfAttention(config, device=device, dtype=dtype)
        self.output = BertResidualOutput(config.hidden_size, config, device=device, dtype=dtype)

    def forward(self, hidden: Tensor, bias: Tensor | None) -> Tensor:
        """(N, L, hidden) -> (N, L, hidden)."""
        return self.output(self.self(hidden, bias), hidden)


class BertIntermediate(Module):
    """The feed-forward layer's widening half: ``activation(dense(x))``."""

    def __init__(self, config: BertConfig, device: Any = None, dtype: Any = None):
        super().__init__()
        self.dense = Linear(config.hidden_size, config.intermediate_size, device=device,
                            dtype=dtype)
        self.hidden_act = config.hidden_act

    def forward(self, hidden: Tensor) -> Tensor:
        """(N, L, hidden) -> (N, L, intermediate_size)."""
        return ACTIVATIONS[self.hidden_act](self.dense(hidden))


class BertLayer(Module):
    """One transformer encoder layer (post-norm): attention, then the feed-forward layer,
    each with its residual connection and layer norm."""

    def __init__(self, config: BertConfig, device: Any = None, dtype: Any = None):
        super().__init__()
        self.attention = BertAttention(config, device=device, dtype=dtype)
        self.intermediate = BertIntermediate(config, device=device, dtype=dtype)
        self.output = BertResidualOutput(config.intermediate_size, config, device=device,
                                         dtype=dtype)

    def forward(self, hidden: Tensor, bias: Tensor | None) -> Tensor:
        """(N, L, hidden) -> (N, L, hidden)."""
        attended = self.attention(hidden, bias)
        return self.output(self.intermediate(attended), attended)


class BertEncoder(Module):
    """The stack of `BertLayer`s (``layer.0``, ``layer.1``, ...)."""

    def __init__(self, config: BertConfig, device: Any = None, dtype: Any = None):
        super().__init__()
        self.layer = ModuleList(BertLayer(config, device=device, dtype=dtype)
                                for _ in range(config.num_hidden_layers))

    def forward(self, hidden: Tensor, bias: Tensor | None) -> Tensor:
        """Each layer in turn."""
        for layer in self.layer:
            hidden = layer(hidden, bias)
        return hidden


class BertPooler(Module):
    """``tanh(dense(h))`` of the first token's ([CLS]) hidden state: BERT's sentence vector
    for next-sentence prediction and classification heads."""

    def __init__(self, config: BertConfig, device: Any = None, dtype: Any = None):
        super().__init__()
        self.dense = Linear(config.hidden_size, config.hidden_size, device=device, dtype=dtype)

    def forward(self, hidden: Tensor) -> Tensor:
        """(N, L, hidden) -> (N, hidden)."""
        return self.dense(hidden[:, 0]).tanh()


class BertModel(Module):
    """The BERT encoder, with transformers' module names: token ids (N, L) to the last
    layer's hidden states (N, L, hidden). `pooler` (`BertPooler`, None without
    `add_pooling_layer`) is not part of `forward`: ``model.pooler(hidden)`` is transformers'
    ``pooler_output``.

    >>> import pyburn
    >>> config = BertConfig(vocab_size=50, hidden_size=8, num_hidden_layers=2,
    ...                     num_attention_heads=2, intermediate_size=16)
    >>> model = BertModel(config, device="flex").eval()
    >>> hidden = model(pyburn.tensor([[2, 7, 9]], device="flex"))
    >>> hidden.shape, model.pooler(hidden).shape
    ((1, 3, 8), (1, 8))
    """

    def __init__(self, config: BertConfig | None = None, add_pooling_layer: bool = True,
                 device: Any = None, dtype: Any = None):
        super().__init__()
        self.config = BertConfig() if config is None else config
        self.embeddings = BertEmbeddings(self.config, device=device, dtype=dtype)
        self.encoder = BertEncoder(self.config, device=device, dtype=dtype)
        self.pooler = (BertPooler(self.config, device=device, dtype=dtype)
                       if add_pooling_layer else None)

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None,
                token_type_ids: Tensor | None = None,
                position_ids: Tensor | None = None) -> Tensor:
        """The last hidden states (N, L, hidden) of `input_ids` (N, L), integers.

        `attention_mask` (N, L) is 1 (or True) at real tokens and 0 at padding (None: all
        real); as in transformers, a padded key gets the dtype's most negative value added to
        its scores, so no token attends to it (padded positions still get hidden states,
        which `mean_pooling` leaves out). `token_type_ids` (N, L) gives each token's segment
        (None: all 0), `position_ids` (N, L) its position (None: 0, 1, ..., L - 1; an ONNX
        export whose sequence length is dynamic takes them as an input, since the exporter
        would freeze a range made in `forward` at the example's length)."""
        _check_tokens(input_ids, "input_ids")
        if not input_ids.dtype.is_integer:
            raise DTypeError(f"BertModel: input_ids must be integers, got {input_ids.dtype.name}")
        if input_ids.shape[1] > self.config.max_position_embeddings:
            raise ShapeError(f"BertModel: {input_ids.shape[1]} tokens is more than the "
                             f"{self.config.max_position_embeddings} positions the model has")
        if token_type_ids is None:
            token_type_ids = zeros_like(input_ids)
        _check_tokens(token_type_ids, "token_type_ids", input_ids.shape)
        if position_ids is None:
            position_ids = arange(input_ids.shape[1], device=input_ids.device)
        else:
            _check_tokens(position_ids, "position_ids", input_ids.shape)
        hidden = self.embeddings(input_ids, token_type_ids, position_ids)
        bias = None
        if attention_mask is not None:
            _check_tokens(attention_mask, "attention_mask", input_ids.shape)
            # (N, 1, 1, L): 0 at real tokens, the dtype's lowest value at padded ones
            padding = 1.0 - attention_mask.cast(hidden.dtype)
            bias = (padding * _LOWEST[hidden.dtype.name]).reshape(input_ids.shape[0], 1, 1, -1)
        return self.encoder(hidden, bias)

    def load_from(self, store: Any, *, filter: Any = None, **options: Any) -> Any:
        """`Module.load_from`, leaving out the keys of transformers' files that hold none of
        the encoder's weights: ``embeddings.position_ids`` (a buffer older versions saved)
        and the pre-training heads ``cls.*`` (after `KEY_REMAP`, as transformers ignores
        them too); `filter` selects further keys."""
        wanted = (lambda key: True) if filter is None else key_predicate(filter)
        return super().load_from(store, filter=lambda key: not _IGNORED.match(key)
                                 and wanted(key), **options)


def mean_pooling(hidden: Tensor, attention_mask: Tensor | None = None) -> Tensor:
    """The mean of `hidden` (N, L, D) over the tokens whose `attention_mask` (N, L) is
    nonzero (None: all): (N, D). The count is clamped at 1e-9, as sentence-transformers
    does, so a sequence that is all padding gives zeros.

    >>> import pyburn
    >>> hidden = pyburn.tensor([[[1.0], [3.0], [100.0]]], device="flex")
    >>> mean_pooling(hidden, pyburn.tensor([[1, 1, 0]], device="flex")).tolist()
    [[2.0]]
    """
    if attention_mask is None:
        return hidden.mean(1)
    if attention_mask.shape != hidden.shape[:2]:
        raise ShapeError(f"mean_pooling: attention_mask {attention_mask.shape} does not fit "
                         f"hidden states {hidden.shape} (expected {hidden.shape[:2]})")
    weights = attention_mask.cast(hidden.dtype).unsqueeze(-1)
    return (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)


class SentenceEncoder(BertModel):
    """A `BertModel` whose output is one vector per sequence: the mean of the last hidden
    states over the real tokens (`mean_pooling`), L2-normalised when `normalize`, as
    sentence-transformers' all-MiniLM-L6-v2 computes it (so cosine similarity is a dot
    product). Its weights are the encoder's, under the same keys.

    >>> import pyburn
    >>> config = BertConfig(vocab_size=50, hidden_size=8, num_hidden_layers=1,
    ...                     num_attention_heads=2, intermediate_size=16)
    >>> encoder = SentenceEncoder(config, device="flex").eval()
    >>> vectors = encoder(pyburn.tensor([[2, 7, 9], [2, 4, 0]], device="flex"))
    >>> [round(v, 5) for v in (vectors * vectors).sum(1).tolist()]
    [1.0, 1.0]
    """

    def __init__(self, config: BertConfig | None = None, normalize: bool = True,
                 add_pooling_layer: bool = True, device: Any = None, dtype: Any = None):
        super().__init__(config, add_pooling_layer=add_pooling_layer, device=device,
                         dtype=dtype)
        self.normalize = normalize

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None,
                token_type_ids: Tensor | None = None,
                position_ids: Tensor | None = None) -> Tensor:
        """The sentence embeddings (N, hidden) of `input_ids` (N, L); the arguments are
        `BertModel.forward`'s."""
        hidden = super().forward(input_ids, attention_mask, token_type_ids, position_ids)
        pooled = mean_pooling(hidden, attention_mask)
        return F.normalize(pooled, p=2.0, dim=1) if self.normalize else pooled


def _build(model: type[BertModel], preset: BertConfig, device: Any = None, dtype: Any = None,
           **options: Any) -> BertModel:
    """`model` with `preset`'s configuration, any of its fields replaced by `options` (a
    smaller model for tests: ``hidden_size=32, num_hidden_layers=2, ...``); the other
    options go to the constructor (``add_pooling_layer``, ``normalize``)."""
    names = set(asdict(preset))
    config = replace(preset, **{k: v for k, v in options.items() if k in names})
    rest = {k: v for k, v in options.items() if k not in names}
    return model(config, **rest, device=device, dtype=dtype)


def _register() -> None:
    """The BERT encoders in the zoo, for the weights transformers publishes (Hub files
    ``model.safetensors`` and ``pytorch_model.bin``, with or without a task model's
    ``bert.`` prefix)."""
    register(ModelEntry("bert-base", partial(_build, BertModel, BertConfig()),
                        "sentence-embedding",
                        "BERT base encoder (12 layers, hidden 768; bert-base-uncased's "
                        "configuration): token ids to last hidden states",
                        weights_from="transformers", key_remap=KEY_REMAP))
    register(ModelEntry("all-minilm-l6-v2", partial(_build, SentenceEncoder, MINILM_L6),
                        "sentence-embedding",
                        "sentence-transformers' MiniLM sentence encoder (6 layers, hidden "
                        "384): token ids to L2-normalised mean-pooled 384-d embeddings",
                        weights_from="transformers", key_remap=KEY_REMAP))


_register()
