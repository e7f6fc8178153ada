"""Neural-network building blocks with PyTorch's names: `Module` and `Parameter`, the
containers, layers, activations and losses, ``pyburn.nn.init`` (parameter initialisation)
and ``pyburn.nn.functional`` (``import pyburn.nn.functional as F``: the stateless ops the
layers call).

>>> import pyburn
>>> from pyburn import nn
>>> model = nn.Sequential(nn.Linear(4, 8, device="flex"), nn.ReLU(), nn.Linear(8, 3, device="flex"))
>>> model.num_params()
67
"""

from __future__ import annotations

from . import functional, init, lora
from .activation import (
    CELU,
    ELU,
    GELU,
    GLU,
    SELU,
    Hardshrink,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LeakyReLU,
    LogSigmoid,
    LogSoftmax,
    Mish,
    PReLU,
    ReLU,
    ReLU6,
    Sigmoid,
    SiLU,
    Softmax,
    Softmax2d,
    Softmin,
    Softplus,
    Softshrink,
    Softsign,
    Tanh,
    Tanhshrink,
    Threshold,
)
from .attention import MultiheadAttention
from .containers import ModuleDict, ModuleList, Sequential
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .distance import CosineSimilarity, PairwiseDistance
from .dropout import AlphaDropout, Dropout, Dropout1d, Dropout2d, Dropout3d, FeatureAlphaDropout
from .embedding import Embedding
from .linear import Bilinear, Linear
from .loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CosineEmbeddingLoss,
    CrossEntropyLoss,
    CTCLoss,
    GaussianNLLLoss,
    HingeEmbeddingLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MarginRankingLoss,
    MSELoss,
    NLLLoss,
    PoissonNLLLoss,
    SmoothL1Loss,
    TripletMarginLoss,
)
from .module import LoadResult, Module
from .normalization import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    GroupNorm,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    LayerNorm,
    RMSNorm,
)
from .parameter import Parameter
from .pooling import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveAvgPool3d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
    AdaptiveMaxPool3d,
    AvgPool1d,
    AvgPool2d,
    AvgPool3d,
    MaxPool1d,
    MaxPool2d,
    MaxPool3d,
)
from .positional import PositionalEncoding, RotaryEmbedding
from .recurrent import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell
from .sampling import (
    CircularPad1d,
    CircularPad2d,
    CircularPad3d,
    ConstantPad1d,
    ConstantPad2d,
    ConstantPad3d,
    Flatten,
    Identity,
    PixelShuffle,
    PixelUnshuffle,
    ReflectionPad1d,
    ReflectionPad2d,
    ReflectionPad3d,
    ReplicationPad1d,
    ReplicationPad2d,
    ReplicationPad3d,
    Unflatten,
    Upsample,
    ZeroPad1d,
    ZeroPad2d,
    ZeroPad3d,
)
from .transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)

__all__ = [
    "CELU", "ELU", "GELU", "GLU", "SELU", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
    "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d",
    "AlphaDropout", "AvgPool1d", "AvgPool2d", "AvgPool3d", "BCELoss", "BCEWithLogitsLoss",
    "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "Bilinear", "CTCLoss", "CircularPad1d",
    "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
    "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
    "CosineEmbeddingLoss", "CosineSimilarity", "CrossEntropyLoss", "Dropout", "Dropout1d",
    "Dropout2d", "Dropout3d", "Embedding", "FeatureAlphaDropout", "Flatten", "GaussianNLLLoss",
    "GroupNorm", "Hardshrink", "Hardsigmoid", "Hardswish", "Hardtanh", "HingeEmbeddingLoss",
    "HuberLoss", "Identity", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "KLDivLoss",
    "L1Loss", "LayerNorm", "LeakyReLU", "Linear", "LoadResult", "LogSigmoid", "LogSoftmax",
    "MSELoss", "MarginRankingLoss", "MaxPool1d", "MaxPool2d", "MaxPool3d", "Mish", "Module",
    "ModuleDict", "ModuleList", "NLLLoss", "PReLU", "PairwiseDistance", "Parameter",
    "PixelShuffle", "PixelUnshuffle", "PoissonNLLLoss", "RMSNorm", "ReLU", "ReLU6",
    "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d",
    "ReplicationPad2d", "ReplicationPad3d", "Sequential", "SiLU", "Sigmoid", "SmoothL1Loss",
    "Softmax", "Softmax2d", "Softmin", "Softplus", "Softshrink", "Softsign", "Tanh",
    "Tanhshrink", "Threshold", "TripletMarginLoss", "Unflatten", "Upsample", "ZeroPad1d",
    "ZeroPad2d", "ZeroPad3d", "functional", "init", "lora",
    "GRU", "GRUCell", "LSTM", "LSTMCell", "MultiheadAttention", "PositionalEncoding", "RNN",
    "RNNCell", "RotaryEmbedding", "Transformer", "TransformerDecoder", "TransformerDecoderLayer",
    "TransformerEncoder", "TransformerEncoderLayer",
]
