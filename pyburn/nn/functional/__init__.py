"""Stateless neural-network ops with ``torch.nn.functional``'s names, arguments and results:
``import pyburn.nn.functional as F``.

Every function is a composite of the public tensor API, so it runs on every device and
gradients come for free on an autodiff device. Differences from PyTorch: returned indices are
int32 (pyburn's default int); loss options after the inputs are keyword-only (PyTorch's
positional slots there are its deprecated ``size_average``/``reduce``); ``inplace=`` is
accepted but results are always new tensors.
"""

from .activation import (
    celu,
    elu,
    gelu,
    glu,
    hardshrink,
    hardsigmoid,
    hardswish,
    hardtanh,
    leaky_relu,
    log_softmax,
    logsigmoid,
    mish,
    prelu,
    relu,
    relu6,
    selu,
    sigmoid,
    silu,
    softmax,
    softmin,
    softplus,
    softshrink,
    softsign,
    tanh,
    tanhshrink,
    threshold,
)
from .attention import scaled_dot_product_attention
from .conv import (
    bilinear,
    conv1d,
    conv2d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
    linear,
)
from .ctc import ctc_loss
from .distance import cosine_similarity, pairwise_distance
from .dropout import (
    alpha_dropout,
    dropout,
    dropout1d,
    dropout2d,
    dropout3d,
    feature_alpha_dropout,
)
from .embedding import embedding, one_hot
from .grid import affine_grid, grid_sample
from .loss import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cosine_embedding_loss,
    cross_entropy,
    gaussian_nll_loss,
    hinge_embedding_loss,
    huber_loss,
    kl_div,
    l1_loss,
    margin_ranking_loss,
    mse_loss,
    nll_loss,
    poisson_nll_loss,
    smooth_l1_loss,
    triplet_margin_loss,
)
from .normalization import (
    batch_norm,
    group_norm,
    instance_norm,
    layer_norm,
    normalize,
    rms_norm,
)
from .pooling import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_avg_pool3d,
    adaptive_max_pool1d,
    adaptive_max_pool2d,
    adaptive_max_pool3d,
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    max_pool1d,
    max_pool2d,
    max_pool3d,
)
from .sampling import fold, interpolate, pad, pixel_shuffle, pixel_unshuffle, unfold

__all__ = [
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
    "adaptive_max_pool2d", "adaptive_max_pool3d", "affine_grid", "alpha_dropout", "avg_pool1d",
    "avg_pool2d", "avg_pool3d", "batch_norm", "bilinear", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "celu", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
    "conv_transpose2d", "conv_transpose3d", "cosine_embedding_loss", "cosine_similarity",
    "cross_entropy", "ctc_loss", "dropout", "dropout1d", "dropout2d", "dropout3d", "elu",
    "embedding", "feature_alpha_dropout", "fold", "gaussian_nll_loss", "gelu", "glu",
    "grid_sample", "group_norm", "hardshrink", "hardsigmoid", "hardswish", "hardtanh",
    "hinge_embedding_loss", "huber_loss", "instance_norm", "interpolate", "kl_div", "l1_loss",
    "layer_norm", "leaky_relu", "linear", "log_softmax", "logsigmoid", "margin_ranking_loss",
    "max_pool1d", "max_pool2d", "max_pool3d", "mish", "mse_loss", "nll_loss", "normalize",
    "one_hot", "pad", "pairwise_distance", "pixel_shuffle", "pixel_unshuffle", "poisson_nll_loss",
    "prelu", "relu", "relu6", "rms_norm", "scaled_dot_product_attention", "selu", "sigmoid",
    "silu", "smooth_l1_loss", "softmax", "softmin", "softplus", "softshrink", "softsign", "tanh",
    "tanhshrink", "threshold", "triplet_margin_loss", "unfold",
]
