"""The Vision Transformer (Dosovitskiy et al., "An Image is Worth 16x16 Words: Transformers for
Image Recognition at Scale", 2020): an image cut into patches, each patch a token, a learned
class token in front, learned position embeddings, a stack of pre-norm transformer encoder
blocks, and a linear head on the class token's final state.

`VisionTransformer`'s modules carry timm's names (``cls_token``, ``pos_embed``,
``patch_embed.proj``, ``blocks.N.norm1``, ``blocks.N.attn.qkv``, ``blocks.N.attn.proj``,
``blocks.N.mlp.fc1``, ..., ``norm``, ``head``), so that timm's ``.pth`` and ``.safetensors``
files load with their own keys. Hugging Face ``transformers`` publishes the same network under
other names and with the query, key and value projections apart (timm fuses them into one
``qkv`` Linear); a model built with ``fused_qkv=False`` keeps them apart too (``attn.q_proj``,
``attn.k_proj``, ``attn.v_proj``), and `TRANSFORMERS_KEYS` renames transformers' keys onto it.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from .._tensor import Tensor
from ..errors import ArgumentError, ShapeError
from ..nn import functional as F
from ..nn import init
from ..nn.containers import ModuleList
from ..nn.conv import Conv2d
from ..nn.linear import Linear
from ..nn.module import Module
from ..nn.normalization import LayerNorm
from ..nn.parameter import empty_parameter
from ..ops.movement import cat
from .convnets import check_images
from .registry import KeyRemap, ModelEntry, Preprocessing, register

#: timm's recipe for its ViT weights: shorter side to 248 (224 / crop_pct 0.9), bicubic, the
#: middle 224 x 224, each channel mapped from [0, 1] to [-1, 1]
TIMM_VIT = Preprocessing(resize=248, crop=224, mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5),
                         interpolation="bicubic")
#: transformers' ViTImageProcessor for google/vit-base-patch16-224: the whole image resized to
#: 224 x 224 (no crop), channels mapped to [-1, 1]
TRANSFORMERS_VIT = Preprocessing(resize=224, mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5),
                                 keep_aspect=False)

#: from the keys of transformers' ViTForImageClassification files onto those of a
#: ``VisionTransformer(fused_qkv=False)``: the layout the Hub's files (and ``save_pretrained``)
#: have, ``vit.encoder.layer.N.attention.attention.query``, ..., and the one transformers 5
#: keeps in memory (its ``state_dict()``), ``vit.layers.N.attention.q_proj``, ...
TRANSFORMERS_KEYS: KeyRemap = (
    (r"^vit\.embeddings\.cls_token$", "cls_token"),
    (r"^vit\.embeddings\.position_embeddings$", "pos_embed"),
    (r"^vit\.embeddings\.patch_embeddings\.projection\.", "patch_embed.proj."),
    (r"^vit\.(?:encoder\.layer|layers)\.(\d+)\.", r"blocks.\1."),
    (r"\.attention\.attention\.([qkv])(?:uery|ey|alue)\.", r".attn.\1_proj."),
    (r"\.attention\.([qkv])_proj\.", r".attn.\1_proj."),
    (r"\.attention\.(?:output\.dense|o_proj)\.", ".attn.proj."),
    (r"\.layernorm_before\.", ".norm1."),
    (r"\.layernorm_after\.", ".norm2."),
    (r"\.intermediate\.dense\.", ".mlp.fc1."),
    (r"\.output\.dense\.", ".mlp.fc2."),
    (r"^vit\.layernorm\.", "norm."),
    (r"^classifier\.", "head."),
)


class PatchEmbedding(Module):
    """Non-overlapping `patch_size` x `patch_size` patches, each linearly mapped to `dim`
    features: a convolution (``proj``) whose stride is its kernel. (N, 3, H, W) ->
    (N, H/p * W/p, dim), the patches in row-major order."""

    def __init__(self, patch_size: int, dim: int, device: Any = None, dtype: Any = None):
        super().__init__()
        self.proj = Conv2d(3, dim, patch_size, stride=patch_size, device=device, dtype=dtype)

    def forward(self, images: Tensor) -> Tensor:
        """The patches' embeddings (N, patches, dim)."""
        return self.proj(images).flatten(2).transpose(1, 2)


class SelfAttention(Module):
    """Multi-head self-attention of a sequence (N, L, dim): the query, key and value
    projections (one ``qkv`` Linear to ``3 * dim``, q then k then v, as timm has it; or
    ``q_proj``, ``k_proj`` and ``v_proj`` apart, without `fused_qkv`), each head's
    ``softmax(q k^T / sqrt(head size)) v``, and the heads concatenated through ``proj``."""

    def __init__(self, dim: int, heads: int, qkv_bias: bool = True, fused_qkv: bool = True,
                 device: Any = None, dtype: Any = None):
        super().__init__()
        self.heads = heads
        self.fused_qkv = fused_qkv
        if fused_qkv:
            self.qkv = Linear(dim, 3 * dim, qkv_bias, device, dtype)
        else:
            self.q_proj = Linear(dim, dim, qkv_bias, device, dtype)
            self.k_proj = Linear(dim, dim, qkv_bias, device, dtype)
            self.v_proj = Linear(dim, dim, qkv_bias, device, dtype)
        self.proj = Linear(dim, dim, device=device, dtype=dtype)

    def forward(self, x: Tensor) -> Tensor:
        """(N, L, dim) attended to itself."""
        n, length, dim = x.shape
        if self.fused_qkv:
            q, k, v = self.qkv(x).chunk(3, -1)
        else:
            q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)
        q, k, v = (t.reshape(n, length, self.heads, dim // self.heads).transpose(1, 2)
                   for t in (q, k, v))
        context = F.scaled_dot_product_attention(q, k, v)
        return self.proj(context.transpose(1, 2).reshape(n, length, dim))


class FeedForward(Module):
    """``fc2(gelu(fc1(x)))``: each token widened to `hidden` features and back (GELU with
    the exact erf, as both publishers' weights were trained)."""

    def __init__(self, dim: int, hidden: int, device: Any = None, dtype: Any = None):
        super().__init__()
        self.fc1 = Linear(dim, hidden, device=device, dtype=dtype)
        self.fc2 = Linear(hidden, dim, device=device, dtype=dtype)

    def forward(self, x: Tensor) -> Tensor:
        """(N, L, dim) -> (N, L, dim)."""
        return self.fc2(F.gelu(self.fc1(x)))


class EncoderBlock(Module):
    """A pre-norm transformer encoder block: ``x + attn(norm1(x))``, then
    ``x + mlp(norm2(x))``."""

    def __init__(self, dim: int, heads: int, hidden: int, layer_norm_eps: float,
                 qkv_bias: bool, fused_qkv: bool, device: Any = None, dtype: Any = None):
        super().__init__()
        self.norm1 = LayerNorm(dim, eps=layer_norm_eps, device=device, dtype=dtype)
        self.attn = SelfAttention(dim, heads, qkv_bias, fused_qkv, device=device, dtype=dtype)
        self.norm2 = LayerNorm(dim, eps=layer_norm_eps, device=device, dtype=dtype)
        self.mlp = FeedForward(dim, hidden, device=device, dtype=dtype)

    def forward(self, x: Tensor) -> Tensor:
        """(N, L, dim) -> (N, L, dim)."""
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


def _check_sizes(sizes: dict[str, Any]) -> None:
    """Every size a positive int, the image cut into whole patches, the features into
    whole heads."""
    for name, value in sizes.items():
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ArgumentError(f"VisionTransformer: {name} must be a positive int, got "
                                f"{value!r}")
    if sizes["image_size"] % sizes["patch_size"]:
        raise ArgumentError(f"VisionTransformer: image_size ({sizes['image_size']}) must be a "
                            f"multiple of patch_size ({sizes['patch_size']})")
    if sizes["dim"] % sizes["heads"]:
        raise ArgumentError(f"VisionTransformer: dim ({sizes['dim']}) must be divisible by "
                            f"heads ({sizes['heads']})")


class VisionTransformer(Module):
    """ViT: (N, 3, image_size, image_size) images to (N, num_classes) class scores (logits).

    The image's ``(image_size / patch_size)**2`` patches become `dim`-wide tokens
    (`PatchEmbedding`), a learned class token goes in front, learned position embeddings
    are added, `depth` `EncoderBlock`s of `heads` heads and ``int(dim * mlp_ratio)``-wide
    feed-forward layers follow, and the head (``head``, a Linear) reads the class token's
    final state after the last LayerNorm (``norm``); every LayerNorm has `layer_norm_eps`.
    The defaults are ViT-B/16's sizes with timm's eps; `fused_qkv` chooses the attention's
    parameter layout (timm's single ``qkv`` Linear, or transformers' three, see
    `SelfAttention`), `qkv_bias` whether those projections have a bias.

    The position embeddings are learned for `image_size`: other sizes are refused.

    >>> import pyburn
    >>> model = VisionTransformer(image_size=32, patch_size=8, dim=16, depth=2, heads=2,
    ...                           num_classes=5, device="flex")
    >>> model(pyburn.zeros(2, 3, 32, 32, device="flex")).shape, model.pos_embed.shape
    ((2, 5), (1, 17, 16))
    """

    def __init__(self, image_size: int = 224, patch_size: int = 16, dim: int = 768,
                 depth: int = 12, heads: int = 12, mlp_ratio: float = 4.0,
                 num_classes: int = 1000, layer_norm_eps: float = 1e-6, qkv_bias: bool = True,
                 fused_qkv: bool = True, device: Any = None, dtype: Any = None):
        super().__init__()
        hidden = int(dim * mlp_ratio)
        _check_sizes({"image_size": image_size, "patch_size": patch_size, "dim": dim,
                      "depth": depth, "heads": heads, "num_classes": num_classes,
                      "int(dim * mlp_ratio)": hidden})
        self.image_size = image_size
        self.dim = dim
        patches = (image_size // patch_size) ** 2
        self.cls_token = init.normal_(empty_parameter((1, 1, dim), device, dtype), std=0.02)
        self.pos_embed = init.normal_(empty_parameter((1, 1 + patches, dim), device, dtype),
                                      std=0.02)
        self.patch_embed = PatchEmbedding(patch_size, dim, device=device, dtype=dtype)
        self.blocks = ModuleList(EncoderBlock(dim, heads, hidden, layer_norm_eps, qkv_bias,
                                              fused_qkv, device=device, dtype=dtype)
                                 for _ in range(depth))
        self.norm = LayerNorm(dim, eps=layer_norm_eps, device=device, dtype=dtype)
        self.head = Linear(dim, num_classes, device=device, dtype=dtype)

    def forward(self, images: Tensor) -> Tensor:
        """Class scores (N, num_classes) for images (N, 3, image_size, image_size)."""
        check_images(images, "VisionTransformer")
        if images.shape[2:] != (self.image_size, self.image_size):
            raise ShapeError(f"VisionTransformer: its position embeddings are for "
                             f"{self.image_size}x{self.image_size} images, got "
                             f"{images.shape[2]}x{images.shape[3]}")
        x = self.patch_embed(images)
        x = cat([self.cls_token.expand(x.shape[0], 1, self.dim), x], 1) + self.pos_embed
        for block in self.blocks:
            x = block(x)
        # LayerNorm works token by token: normalising the class token alone is the same
        return self.head(self.norm(x[:, 0]))


def _register() -> None:
    """ViT-Ti/16 with timm's weights, and ViT-B/16 with Google's as transformers publishes
    them."""
    register(ModelEntry("vit_tiny_patch16_224", partial(VisionTransformer, dim=192, heads=3),
                        "image-classification",
                        "ViT-Ti/16 (12 blocks, dim 192, 3 heads), 5.7 M parameters, timm's "
                        "layout", weights_from="timm", preprocessing=TIMM_VIT))
    register(ModelEntry("vit-base-patch16-224",
                        partial(VisionTransformer, layer_norm_eps=1e-12, fused_qkv=False),
                        "image-classification",
                        "ViT-B/16 (12 blocks, dim 768, 12 heads), 86.6 M parameters, "
                        "transformers' ViTForImageClassification layout (google/"
                        "vit-base-patch16-224)", weights_from="transformers",
                        key_remap=TRANSFORMERS_KEYS, preprocessing=TRANSFORMERS_VIT))


_register()
