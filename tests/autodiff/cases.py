"""The table of differentiable computations the autodiff suite checks.

Every case is written once, as a function of a library `L` (pyburn or PyTorch, see
`helpers.PyburnLib`) and the case's float inputs. Together the cases reach every backward
rule (``test_rules.py`` checks that), every elementwise op of the op table that has a
gradient, and the composites of the tensor API built on them.
"""

from __future__ import annotations

import math

import pyburn.nn.functional  # noqa: F401  (the cases reach it as L.nn.functional)
from pyburn.ops.elementwise import BINARY, UNARY

from .helpers import FLOAT32, Case, Input, case, given, rand

# Inputs where each op is smooth and well conditioned; the default is [-2, 2).
UNARY_RANGES = {
    "log": (0.2, 3.0), "log2": (0.2, 3.0), "log1p": (-0.7, 2.0), "sqrt": (0.2, 3.0),
    "rsqrt": (0.2, 3.0), "reciprocal": (0.3, 2.0), "tan": (-1.2, 1.2), "asin": (-0.9, 0.9),
    "acos": (-0.9, 0.9), "acosh": (1.2, 3.0), "atanh": (-0.9, 0.9),
}
BINARY_RANGES = {
    "div": ((-2.0, 2.0), (0.5, 2.0)), "floor_divide": ((-3.0, 3.0), (0.5, 2.0)),
    "remainder": ((-3.0, 3.0), (0.6, 1.7)), "fmod": ((-3.0, 3.0), (0.6, 1.7)),
    "pow": ((0.5, 2.0), (-1.5, 1.5)),
}
FLOAT_RESULT_DOMAINS = ("float", "numeric", "rounding")
# PyTorch implements no derivative for floor_divide; its floor division with a zero
# gradient is div(rounding_mode="floor").
BINARY_REFERENCES = {"floor_divide": lambda L, a, b: L.div(a, b, rounding_mode="floor")}


def _method(name: str):
    return lambda L, x: getattr(x, name)()


def _function(name: str):
    return lambda L, a, b: getattr(L, name)(a, b)


def _within(low_high: tuple[float, float]) -> Input:
    return rand(3, 4, low=low_high[0], high=low_high[1])


ELEMENTWISE = [
    case(name, _method(name), _within(UNARY_RANGES.get(name, (-2.0, 2.0))))
    for name, op in UNARY.items() if op.domain in FLOAT_RESULT_DOMAINS
] + [
    case(name, _function(name), *map(_within, BINARY_RANGES.get(name, ((-2.0, 2.0),) * 2)),
         ref=BINARY_REFERENCES.get(name))
    for name, op in BINARY.items() if op.domain in FLOAT_RESULT_DOMAINS
] + [
    case("remainder_negative_divisor", lambda L, a, b: a % b, rand(3, 4, low=-3, high=3),
         rand(3, 4, low=-1.7, high=-0.6)),
    case("pow_integer_exponent", lambda L, x: x ** 3, rand(3, 4)),
    case("pow_scalar_base", lambda L, x: 2.0 ** x, rand(3, 4)),
    case("pow_fractional_exponent", lambda L, x: x ** 0.5, rand(3, 4, low=0.2, high=3)),
    case("pow_at_zero_base", lambda L, x: x ** 2, given([0.0, 1.5, -2.0])),
    case("scalar_arithmetic", lambda L, x: (2.0 - x) * 3.0 + x / 4.0 - 1.5 / (x + 3.0),
         rand(3, 4)),
    case("abs_at_zero", lambda L, x: abs(x), given([-1.0, 0.0, 2.0]), fd=False),
    case("maximum_ties", lambda L, a, b: L.maximum(a, b), given([1.0, 2.0, -3.0, 0.5]),
         given([1.0, 0.0, -3.0, 4.0]), fd=False),
    case("minimum_ties", lambda L, a, b: L.minimum(a, b), given([1.0, 2.0, -3.0, 0.5]),
         given([1.0, 0.0, -3.0, 4.0]), fd=False),
    case("add_broadcast", lambda L, a, b: a + b, rand(3, 1, 4), rand(2, 4)),
    case("mul_broadcast", lambda L, a, b: a * b, rand(4, 1), rand(1, 5)),
    case("div_broadcast", lambda L, a, b: a / b, rand(2, 3), rand(3, low=0.5, high=2)),
    case("pow_broadcast", lambda L, a, b: a ** b, rand(2, 1, 3, low=0.5, high=2), rand(4, 1)),
    case("maximum_broadcast", lambda L, a, b: L.maximum(a, b), rand(3, 4), rand(4)),
    case("atan2_broadcast", lambda L, a, b: L.atan2(a, b), rand(3, 1), rand(1, 4)),
    case("same_tensor_twice", lambda L, x: x * x + x / (x * x + 1.0), rand(3, 4)),
    case("add_alpha", lambda L, a, b: L.add(a, b, alpha=2.5), rand(3, 4), rand(3, 4)),
    case("sub_alpha", lambda L, a, b: L.sub(a, b, alpha=-0.5), rand(3, 4), rand(4)),
    case("square", lambda L, x: L.square(x), rand(3, 4)),
    case("sigmoid", lambda L, x: x.sigmoid(), rand(3, 4, low=-4, high=4)),
    case("clamp", lambda L, x: x.clamp(-0.7, 0.9), rand(3, 4)),
    case("clamp_min_only", lambda L, x: L.clamp(x, min=0.2), rand(3, 4)),
    case("clamp_tensor_bounds", lambda L, x, lo, hi: L.clamp(x, lo, hi), rand(3, 4),
         rand(4, low=-1.5, high=-0.2), rand(3, 1, low=0.2, high=1.5)),
    # PyTorch passes the whole gradient where x equals a bound (clamp is the identity there)
    case("clip_at_bounds", lambda L, x: x.clip(-1.0, 1.0), given([-1.0, -0.5, 1.0, 2.0]),
         fd=False),
    case("div_floor", lambda L, a, b: L.div(a, b, rounding_mode="floor") + a, rand(3, 4),
         rand(3, 4, low=0.5, high=2)),
    case("div_trunc", lambda L, a, b: L.div(a, b, rounding_mode="trunc") * b, rand(3, 4),
         rand(3, 4, low=0.5, high=2)),
    case("where", lambda L, a, b: L.where(a > 0, a, b), rand(3, 4), rand(3, 4)),
    case("where_broadcast", lambda L, a, b: L.where(b > 0, a, b * 2.0), rand(3, 1), rand(4)),
    case("where_scalar", lambda L, x: L.where(x > 0.5, x.exp(), 0.25), rand(3, 4)),
    case("where_method", lambda L, a, b: a.where(b < 0, b), rand(2, 3), rand(2, 3)),
    case("cast_float32_roundtrip", lambda L, x: x.float().double() * x.float(), rand(3, 4),
         tol=FLOAT32, fd=False, needs=("float64",)),
    case("cast_float16_roundtrip", lambda L, x: x.half().float() * x, rand(3, 4), tol=FLOAT32,
         fd=False, needs=("float16",)),
    case("cast_to_int_passes_nothing", lambda L, x: x.int() * x + x.floor() * 2.0,
         rand(3, 4, low=-4, high=4)),
    case("to_dtype", lambda L, x: x.to(L.float64).exp(), rand(3, 4), needs=("float64",)),
]

REDUCTIONS = [
    case("sum_all", lambda L, x: x.sum(), rand(3, 4)),
    case("sum_dim", lambda L, x: x.sum(dim=1), rand(2, 3, 4)),
    case("sum_dims_keepdim", lambda L, x: x.sum(dim=(0, 2), keepdim=True), rand(2, 3, 4)),
    case("sum_negative_dim", lambda L, x: L.sum(x, -1), rand(2, 3, 4)),
    case("mean_all", lambda L, x: x.mean(), rand(3, 4)),
    case("mean_dims", lambda L, x: x.mean(dim=(1, 2)), rand(2, 3, 4)),
    case("mean_keepdim", lambda L, x: x.mean(dim=0, keepdim=True), rand(3, 4)),
    case("prod_all", lambda L, x: x.prod(), rand(2, 3, low=0.5, high=1.5)),
    case("prod_dim", lambda L, x: x.prod(dim=1), rand(3, 4, low=-2, high=2)),
    case("prod_dim_keepdim", lambda L, x: x.prod(dim=0, keepdim=True), rand(3, 4)),
    case("amax_all", lambda L, x: x.amax(), rand(3, 4)),
    case("amax_dims", lambda L, x: x.amax(dim=(0, 2)), rand(2, 3, 4)),
    case("amin_keepdim", lambda L, x: x.amin(dim=1, keepdim=True), rand(3, 4)),
    case("max_all", lambda L, x: x.max(), rand(3, 4)),
    case("min_all", lambda L, x: L.min(x), rand(3, 4)),
    case("max_dim", lambda L, x: x.max(dim=1).values, rand(3, 4)),
    case("min_dim_keepdim", lambda L, x: x.min(dim=0, keepdim=True).values, rand(3, 4)),
    case("max_elementwise", lambda L, a, b: L.max(a, b), rand(3, 4), rand(4)),
    case("amax_ties", lambda L, x: x.amax(dim=1), given([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]]),
         fd=False),
    case("amin_ties_all", lambda L, x: x.amin(), given([[0.5, -1.0], [-1.0, 4.0]]), fd=False),
    case("max_all_ties", lambda L, x: x.max(), given([[1.0, 3.0], [3.0, 3.0]]), fd=False),
    # ties share the gradient equally, as in torch.amax (torch.max(dim) picks one index)
    case("max_dim_ties", lambda L, x: x.max(dim=1).values,
         given([[1.0, 3.0, 3.0], [2.0, 0.0, 2.0]]), ref=lambda L, x: x.amax(dim=1), fd=False),
    case("min_dim_ties", lambda L, x: x.min(dim=0).values, given([[1.0, 3.0], [1.0, 2.0]]),
         ref=lambda L, x: x.amin(dim=0), fd=False),
    case("var_dim", lambda L, x: x.var(dim=1), rand(3, 4)),
    case("var_population_keepdim", lambda L, x: x.var(dim=(0, 1), keepdim=True, correction=0),
         rand(2, 3, 4)),
    case("var_all", lambda L, x: L.var(x), rand(3, 4)),
    case("std_dim", lambda L, x: x.std(dim=0), rand(3, 4)),
    case("std_unbiased_false", lambda L, x: x.std(unbiased=False), rand(3, 4)),
    case("logsumexp_dim", lambda L, x: x.logsumexp(dim=1), rand(3, 4, low=-4, high=4)),
    case("logsumexp_dims_keepdim", lambda L, x: L.logsumexp(x, (0, 2), keepdim=True),
         rand(2, 3, 4)),
    case("logsumexp_large", lambda L, x: x.logsumexp(dim=0), rand(3, 4, low=300, high=310)),
    case("norm_2", lambda L, x: L.norm(x), rand(3, 4)),
    case("norm_fro", lambda L, x: L.norm(x, "fro", dim=(0, 1)), rand(3, 4)),
    case("norm_1_dim", lambda L, x: L.norm(x, 1, dim=1), rand(3, 4)),
    case("norm_3_keepdim", lambda L, x: L.norm(x, 3, dim=0, keepdim=True), rand(3, 4)),
    case("norm_half", lambda L, x: L.norm(x, 0.5, dim=1), rand(3, 4)),
    case("norm_inf", lambda L, x: L.norm(x, math.inf, dim=1), rand(3, 4)),
    case("norm_minus_inf", lambda L, x: L.norm(x, -math.inf), rand(3, 4)),
    # the norm of a zero vector has the zero subgradient in PyTorch (sqrt's is infinite);
    # PyTorch's second derivative there is NaN, pyburn's is 0
    case("norm_2_of_zeros", lambda L, x: L.norm(x, 2, dim=1), given([[0.0, 0.0], [3.0, 4.0]]),
         fd=False, hvp=False),
    case("cumsum", lambda L, x: x.cumsum(0), rand(3, 4)),
    case("cumsum_last", lambda L, x: L.cumsum(x, dim=-1), rand(2, 3, 4)),
    case("cumprod", lambda L, x: x.cumprod(1), rand(3, 4, low=0.5, high=1.5)),
    case("cumprod_signed", lambda L, x: L.cumprod(x, dim=0), rand(4, 3)),
]


MOVEMENT = [
    case("reshape", lambda L, x: x.reshape(2, 6).exp(), rand(3, 4)),
    case("reshape_infer", lambda L, x: x.reshape(-1) * L.const([float(i) for i in range(12)]),
         rand(3, 4)),
    case("view", lambda L, x: x.view(4, 3), rand(3, 4)),
    case("flatten", lambda L, x: x.flatten(1), rand(2, 3, 4)),
    case("flatten_range", lambda L, x: L.flatten(x, 0, 1), rand(2, 3, 4)),
    case("unflatten", lambda L, x: x.unflatten(1, (2, 2)), rand(3, 4)),
    case("squeeze_all", lambda L, x: x.squeeze(), rand(3, 1, 4, 1)),
    case("squeeze_dim", lambda L, x: x.squeeze(1), rand(3, 1, 4, 1)),
    case("squeeze_dims", lambda L, x: x.squeeze((1, 3)), rand(3, 1, 4, 1)),
    case("unsqueeze", lambda L, x: x.unsqueeze(0) + x.unsqueeze(-1).sum(), rand(3, 4)),
    case("permute", lambda L, x: x.permute(2, 0, 1), rand(2, 3, 4)),
    case("transpose", lambda L, x: x.transpose(0, 2), rand(2, 3, 4)),
    case("T", lambda L, x: x.T, rand(3, 4)),
    case("mT", lambda L, x: x.mT, rand(2, 3, 4)),
    case("movedim", lambda L, x: x.movedim(0, -1), rand(2, 3, 4)),
    case("swapdims", lambda L, x: L.swapdims(x, 0, 1), rand(2, 3, 4)),
    case("expand", lambda L, x: x.expand(2, 3, 4), rand(3, 1)),
    case("expand_keep", lambda L, x: x.expand(-1, 5), rand(3, 1)),
    case("broadcast_to", lambda L, x: L.broadcast_to(x, (2, 3, 4)), rand(4)),
    case("expand_as", lambda L, x, y: x.expand_as(y) * y, rand(1, 4), rand(3, 4)),
    case("repeat", lambda L, x: x.repeat(2, 1, 3), rand(2, 3)),
    case("tile", lambda L, x: x.tile((2,)), rand(2, 3)),
    case("tile_more_dims", lambda L, x: L.tile(x, (2, 1, 2)), rand(2, 3)),
    case("flip", lambda L, x: x.flip(0), rand(3, 4)),
    case("flip_dims", lambda L, x: L.flip(x, (0, 2)), rand(2, 3, 4)),
    case("roll", lambda L, x: x.roll(1, 1), rand(3, 4)),
    case("roll_dims", lambda L, x: L.roll(x, (1, -2), (0, 1)), rand(3, 4)),
    case("roll_flat", lambda L, x: x.roll(5), rand(3, 4)),
    case("narrow", lambda L, x: x.narrow(1, 1, 2), rand(3, 4)),
    case("narrow_negative_start", lambda L, x: L.narrow(x, 0, -2, 2), rand(3, 4)),
    case("split", lambda L, x: x.split(3, dim=1), rand(2, 5)),
    case("split_sections", lambda L, x: x.split([1, 3], dim=0), rand(4, 2)),
    case("chunk", lambda L, x: x.chunk(3, dim=1), rand(2, 7)),
    case("cat", lambda L, a, b: L.cat([a, b], 0), rand(2, 3), rand(1, 3)),
    case("cat_three", lambda L, a, b, c: L.cat([a, b, c], dim=1), rand(2, 1), rand(2, 3),
         rand(2, 2)),
    case("cat_same_twice", lambda L, a: L.cat([a, a * 2.0], -1), rand(2, 3)),
    case("cat_promotes_float32", lambda L, a, b: L.cat([a.float(), b], 0), rand(2, 3),
         rand(2, 3), tol=FLOAT32, fd=False),
    case("cat_promotes_int", lambda L, a: L.cat([a, L.ints([[1, 2, 3]])], 0) * a.sum(),
         rand(2, 3)),
    case("cat_with_constant", lambda L, a, b: L.cat([a, b], 1), rand(2, 3),
         rand(2, 2, grad=False)),
    case("stack", lambda L, a, b: L.stack([a, b]), rand(2, 3), rand(2, 3)),
    case("stack_last", lambda L, a, b: L.stack([a, b, a], dim=-1), rand(2, 3), rand(2, 3)),
    case("stack_promotes", lambda L, a, b: L.stack([a, b.float()], 1), rand(2, 3), rand(2, 3),
         tol=FLOAT32, fd=False),
    case("pad_constant", lambda L, x: L.pad(x, (1, 2)), rand(3, 4)),
    case("pad_constant_value_2d", lambda L, x: L.pad(x, (1, 0, 2, 1), value=0.5), rand(3, 4)),
    case("pad_constant_crop", lambda L, x: L.pad(x, (-1, 2, 1, -1)), rand(3, 4)),
    case("pad_reflect", lambda L, x: L.pad(x, (2, 1), mode="reflect"), rand(2, 3, 5)),
    case("pad_reflect_2d", lambda L, x: L.pad(x, (1, 1, 2, 1), mode="reflect"),
         rand(1, 2, 4, 5)),
    case("pad_replicate", lambda L, x: L.pad(x, (1, 2, 2, 1), mode="replicate"),
         rand(2, 2, 4, 3)),
    case("pad_circular", lambda L, x: L.pad(x, (1, 2), mode="circular"), rand(2, 3, 4)),
]


def _setitem_slice(L, x, v):
    y = x * 2.0
    y[1:3] = v
    return y


def _setitem_index_tensor(L, x, v):
    y = x.sin() * 3.0
    y[L.ints([0, 3])] = v
    return y


def _setitem_column(L, x, v):
    y = x + 1.0
    y[:, 1] = v
    return y


def _setitem_mask_scalar(L, x):
    y = x * x
    y[y > 1.0] = 0.5
    return y


def _setitem_stepped(L, x, v):
    y = x * 1.0
    y[::2, 1::2] = v.sin()
    return y


def _in_place_ops(L, x, v):
    y = x * 1.0
    y.add_(v)
    y.mul_(x)
    y.sub_(v * 0.5)
    return y.tanh_()


def _copy_into(L, x, v):
    y = x.sin() * 3.0
    y.copy_(v.sin())
    return y * x


INDEXING = [
    case("in_place_ops", _in_place_ops, rand(3, 4), rand(4)),
    case("copy_into_non_leaf", _copy_into, rand(3, 4), rand(4)),
    case("getitem_int", lambda L, x: x[1], rand(3, 4)),
    case("getitem_negative_ints", lambda L, x: x[-1, 2], rand(3, 4)),
    case("getitem_slice", lambda L, x: x[1:3], rand(4, 3)),
    case("getitem_step", lambda L, x: x[::2], rand(5, 3)),
    case("getitem_steps_2d", lambda L, x: x[1::2, ::3], rand(5, 7)),
    case("getitem_negative_step", lambda L, x: x[::-1], rand(4, 3),
         ref=lambda L, x: x.flip(0)),
    case("getitem_negative_step_2", lambda L, x: x[:, ::-2], rand(3, 5),
         ref=lambda L, x: x.flip(1)[:, ::2]),
    case("getitem_negative_range", lambda L, x: x[3:0:-1], rand(5, 2),
         ref=lambda L, x: x[1:4].flip(0)),
    case("getitem_none", lambda L, x: x[None, :, None], rand(3, 4)),
    case("getitem_ellipsis", lambda L, x: x[..., 1], rand(2, 3, 4)),
    case("getitem_ellipsis_none", lambda L, x: x[1, ..., None, ::2], rand(2, 3, 4)),
    case("getitem_bool_mask_from_data", lambda L, x: x[x > 0], rand(3, 4)),
    case("getitem_bool_rows", lambda L, x: x[L.bools([True, False, True])], rand(3, 4)),
    case("getitem_bool_columns", lambda L, x: x[:, L.bools([False, True, True, False])],
         rand(3, 4)),
    case("getitem_int_tensor_repeated", lambda L, x: x[L.ints([2, 0, 2, 2])], rand(3, 4)),
    case("getitem_int_list_pairs", lambda L, x: x[[0, 1, 1], [2, 2, 2]], rand(3, 4)),
    case("getitem_int_columns", lambda L, x: x[:, [1, 1, 3]], rand(3, 4)),
    case("getitem_int_2d_index", lambda L, x: x[L.ints([[0, 1], [1, 0]])], rand(3, 4)),
    case("getitem_non_adjacent_advanced", lambda L, x: x[[0, 1], :, [3, 0]], rand(2, 3, 4)),
    case("getitem_negative_index_tensor", lambda L, x: x[L.ints([-1, 0])], rand(3, 4)),
    case("index_put", lambda L, x, v: L.index_put(x * 1.0, (L.ints([0, 2]),), v),
         rand(3, 4), rand(2, 4)),
    case("index_put_accumulate_repeated",
         lambda L, x, v: L.index_put(x.exp(), (L.ints([1, 0, 1]), L.ints([2, 2, 2])), v,
                                     accumulate=True), rand(2, 3), rand(3)),
    case("setitem_slice", _setitem_slice, rand(4, 3), rand(2, 3)),
    case("setitem_index_tensor", _setitem_index_tensor, rand(4, 3), rand(3)),
    case("setitem_column", _setitem_column, rand(4, 3), rand(4)),
    case("setitem_mask_scalar", _setitem_mask_scalar, rand(3, 4)),
    case("setitem_stepped", _setitem_stepped, rand(4, 5), rand(2, 2)),
    case("gather", lambda L, x: x.gather(1, L.ints([[0, 0], [3, 1], [2, 2]])), rand(3, 4)),
    case("gather_dim0", lambda L, x: L.gather(x, 0, L.ints([[2, 0, 1, 2]])), rand(3, 4)),
    case("scatter", lambda L, x, s: x.scatter(0, L.ints([[2, 0, 1], [0, 2, 2]]), s),
         rand(3, 3), rand(2, 3)),
    case("scatter_src_larger_than_index",
         lambda L, x, s: L.scatter(x, 1, L.ints([[1], [0]]), s), rand(2, 3), rand(2, 2),
         ref=lambda L, x, s: L.scatter(x, 1, L.ints([[1], [0]]), s[:, :1])),
    case("scatter_value", lambda L, x: x.scatter(1, L.ints([[0], [2]]), 2.5), rand(2, 3)),
    case("scatter_add", lambda L, x, s: x.scatter_add(1, L.ints([[0, 0, 2], [1, 1, 1]]), s),
         rand(2, 3), rand(2, 3)),
    case("scatter_reduce_add",
         lambda L, x, s: L.scatter_accumulate(x, 0, L.ints([[1, 1], [1, 0]]), s), rand(2, 2),
         rand(2, 2)),
    case("index_select", lambda L, x: x.index_select(0, L.ints([2, 0, 2])), rand(3, 4)),
    case("index_select_dim1", lambda L, x: L.index_select(x, 1, L.ints([3, 3, 1])),
         rand(2, 4)),
    case("take", lambda L, x: L.take(x, L.ints([[0, 5], [11, 5]])), rand(3, 4)),
    case("masked_fill", lambda L, x: x.masked_fill(L.bools([True, False, False, True]), 1.5),
         rand(3, 4)),
    case("masked_fill_from_data", lambda L, x: x.masked_fill(x < 0, 0.0), rand(3, 4)),
    case("masked_select", lambda L, x: L.masked_select(x, L.bools([[True], [False], [True]])),
         rand(3, 4)),
    case("sort_values", lambda L, x: x.sort(dim=1).values, rand(3, 4)),
    case("sort_descending_dim0", lambda L, x: L.sort(x, 0, descending=True).values,
         rand(3, 4)),
    case("topk_values", lambda L, x: x.topk(2, dim=1).values, rand(3, 4)),
    case("topk_smallest", lambda L, x: L.topk(x, 2, dim=0, largest=False).values, rand(3, 4)),
    case("tril", lambda L, x: x.tril(), rand(3, 4)),
    case("triu_offset", lambda L, x: L.triu(x, 1), rand(2, 3, 4)),
    case("tril_negative_offset", lambda L, x: x.tril(-1), rand(4, 3)),
]

LINALG = [
    case("matmul_vector_vector", lambda L, a, b: a @ b, rand(4), rand(4)),
    case("matmul_vector_matrix", lambda L, a, b: a @ b, rand(3), rand(3, 4)),
    case("matmul_matrix_vector", lambda L, a, b: L.matmul(a, b), rand(3, 4), rand(4)),
    case("matmul_2d", lambda L, a, b: a @ b, rand(3, 4), rand(4, 2)),
    case("matmul_batched", lambda L, a, b: a @ b, rand(2, 3, 4), rand(2, 4, 5)),
    case("matmul_broadcast_batch", lambda L, a, b: a @ b, rand(2, 1, 3, 4), rand(5, 4, 2)),
    case("matmul_batched_vector", lambda L, a, b: a @ b, rand(2, 3, 4), rand(4)),
    case("matmul_self", lambda L, a: a @ a, rand(3, 3)),
    case("matmul_chain_tanh", lambda L, a, b, c: ((a @ b).tanh() @ c), rand(2, 3), rand(3, 4),
         rand(4, 2)),
    case("dot", lambda L, a, b: L.dot(a, b), rand(5), rand(5)),
    case("outer", lambda L, a, b: L.outer(a, b), rand(3), rand(4)),
    case("einsum_matmul", lambda L, a, b: L.einsum("ij,jk->ik", a, b), rand(2, 3), rand(3, 4)),
    case("einsum_batched", lambda L, a, b: L.einsum("bij,bjk->bik", a, b), rand(2, 2, 3),
         rand(2, 3, 2)),
    case("einsum_diagonal", lambda L, a: L.einsum("ii->i", a), rand(3, 3)),
    case("einsum_trace", lambda L, a: L.einsum("ii", a), rand(3, 3)),
    case("einsum_transpose", lambda L, a: L.einsum("ij->ji", a), rand(2, 3)),
    case("einsum_total", lambda L, a: L.einsum("ij->", a), rand(2, 3)),
    case("einsum_outer", lambda L, a, b: L.einsum("i,j->ij", a, b), rand(3), rand(2)),
    case("einsum_rowwise_dot", lambda L, a, b: L.einsum("bi,bi->b", a, b), rand(3, 4),
         rand(3, 4)),
    case("einsum_ellipsis", lambda L, a, b: L.einsum("...ij,...jk->...ik", a, b),
         rand(2, 2, 3), rand(2, 3, 2)),
    case("einsum_three_operands", lambda L, a, b, c: L.einsum("ij,jk,kl->il", a, b, c),
         rand(2, 3), rand(3, 4), rand(4, 2)),
    case("einsum_contract_two_dims", lambda L, a, b: L.einsum("ijk,jkl->il", a, b),
         rand(2, 3, 2), rand(3, 2, 4)),
]

COMPOSED = [
    case("mlp_tanh", lambda L, x, w1, b1, w2: ((x @ w1 + b1).tanh() @ w2).logsumexp(dim=1),
         rand(4, 3, grad=False), rand(3, 5), rand(5), rand(5, 2)),
    case("softmax_by_hand", lambda L, x: (x - x.logsumexp(dim=1, keepdim=True)).exp(),
         rand(3, 4)),
    case("layer_norm_by_hand",
         lambda L, x: (x - x.mean(dim=-1, keepdim=True)) / (x.var(dim=-1, keepdim=True,
                                                                  correction=0) + 1e-5).sqrt(),
         rand(3, 5)),
    case("x_cubed_sin", lambda L, x: x ** 3 * x.sin(), rand(3, 4)),
    case("diamond", lambda L, x: (y := x.exp()) * y.sin() + y.cumsum(1), rand(3, 4)),
    case("long_chain", lambda L, x: (x * 0.9 + 0.1).tanh().reshape(4, 3).T.flip(0).sum(0),
         rand(3, 4)),
]

# Convolution and pooling: composites on most devices, one node each where the device has
# the "conv" / "max_pool" / "avg_pool" capabilities (their rules: conv, conv_transpose,
# conv_weight, max_pool and avg_pool; the second-order checks go through all three conv
# rules).
CONVOLUTION = [
    case("conv2d", lambda L, x, w, b: L.nn.functional.conv2d(x, w, b, stride=(2, 1), padding=1,
                                                             dilation=(1, 2), groups=2),
         rand(2, 4, 5, 6), rand(6, 2, 3, 2), rand(6)),
    case("conv1d_same_asymmetric", lambda L, x, w: L.nn.functional.conv1d(x, w, padding="same"),
         rand(2, 2, 7), rand(3, 2, 4),
         ref=lambda L, x, w: L.nn.functional.conv1d(L.nn.functional.pad(x, (1, 2)), w)),
    case("conv3d_data_input", lambda L, x, w: L.nn.functional.conv3d(x, w, stride=2),
         rand(1, 2, 4, 5, 3, grad=False), rand(2, 2, 2, 3, 1)),
    # the bias inside the convolution where the device offers "conv_bias": its gradient,
    # with and without the others', and through a nonlinearity for a second order that is
    # not zero
    case("conv1d_bias_squared", lambda L, x, w, b: L.nn.functional.conv1d(
        x, w, b, stride=2, padding=1, groups=3) ** 2, rand(2, 3, 7), rand(6, 1, 3), rand(6)),
    case("conv3d_bias_only_the_bias_learns", lambda L, x, w, b: L.nn.functional.conv3d(
        x, w, b, padding=(1, 0, 1)).tanh(), rand(2, 2, 3, 4, 3, grad=False),
         rand(3, 2, 2, 2, 2, grad=False), rand(3)),
    case("conv_transpose2d", lambda L, x, w: L.nn.functional.conv_transpose2d(
        x, w, stride=2, padding=1, output_padding=1), rand(2, 3, 3, 4), rand(3, 2, 3, 3)),
    case("conv_transpose1d_past_the_last_window",
         lambda L, x, w: L.nn.functional.conv_transpose1d(x, w, stride=3, output_padding=2,
                                                          groups=2),
         rand(1, 4, 4), rand(4, 1, 3)),
    case("max_pool2d", lambda L, x: L.nn.functional.max_pool2d(x, 3, stride=2, padding=1),
         rand(2, 3, 5, 6)),
    case("max_pool1d_unbatched", lambda L, x: L.nn.functional.max_pool1d(x, 2, dilation=2,
                                                                         ceil_mode=True),
         rand(3, 8)),
    case("avg_pool2d", lambda L, x: L.nn.functional.avg_pool2d(
        x, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False), rand(2, 3, 5, 6)),
    case("avg_pool2d_divisor", lambda L, x: L.nn.functional.avg_pool2d(
        x, 2, padding=1, divisor_override=3), rand(1, 2, 3, 5)),
    case("adaptive_avg_pool1d_unbatched",
         lambda L, x: L.nn.functional.adaptive_avg_pool1d(x, 3), rand(3, 8)),
]

# Row and batch normalisations: composites on most devices, one node each where the device has
# the "softmax" / "layer_norm" / "batch_norm" capabilities (their rules: softmax, which covers
# log_softmax, layer_norm and batch_norm; batch_norm in training, with its batch statistics,
# with and without weight and bias, and with the data or the weight constant; batch_norm_eval,
# with given statistics).
ROWS = [
    case("softmax", lambda L, x: L.nn.functional.softmax(x, dim=1), rand(3, 5, 2)),
    case("log_softmax", lambda L, x: L.nn.functional.log_softmax(x, dim=-1), rand(4, 6)),
    case("layer_norm", lambda L, x, w, b: L.nn.functional.layer_norm(x, (3, 4), w, b),
         rand(2, 3, 4), rand(3, 4), rand(3, 4)),
    case("batch_norm", lambda L, x, w, b: L.nn.functional.batch_norm(
        x, None, None, w, b, training=True), rand(3, 2, 4, 2), rand(2), rand(2)),
    case("batch_norm_rows_no_affine", lambda L, x: L.nn.functional.batch_norm(
        x, None, None, training=True, eps=0.1), rand(5, 3)),
    case("batch_norm_bias_only_data_input", lambda L, x, b: L.nn.functional.batch_norm(
        x, None, None, None, b, training=True), rand(4, 3, 5, grad=False), rand(3)),
    case("batch_norm_constant_weight_squared", lambda L, x, w: L.nn.functional.batch_norm(
        x, None, None, w, None, training=True) ** 2, rand(3, 2, 5), rand(2, grad=False)),
    # in evaluation (the "batch_norm_eval" capability), with given statistics
    case("batch_norm_eval_squared", lambda L, x, m, v, w, b: L.nn.functional.batch_norm(
        x, m, v, w, b, eps=0.1) ** 2, rand(2, 3, 4), rand(3, grad=False),
         rand(3, low=0.5, high=2, grad=False), rand(3), rand(3)),
]

# Class losses: composites on most devices, one node each where the device has the
# "nll_loss" capability (its rules: nll_loss, and nll_loss_grad, which only a backward pass
# makes and the second-order checks go through), after the "softmax" one for cross_entropy.
LOSSES = [
    case("cross_entropy_ignore_index",
         lambda L, x: L.nn.functional.cross_entropy(x, L.ints([2, 0, 3, 1]), ignore_index=3),
         rand(4, 5)),
    case("cross_entropy_weighted_sum", lambda L, x, w: L.nn.functional.cross_entropy(
        x, L.ints([[1, 0], [2, 2], [0, 1]]), w, reduction="sum"),
         rand(3, 3, 2), rand(3, low=0.5, high=2.0, grad=False)),
    case("nll_loss_each", lambda L, x, w: L.nn.functional.nll_loss(
        x, L.ints([4, 1, 0]), w, ignore_index=0, reduction="none"),
         rand(3, 5), rand(5, low=0.5, high=2.0, grad=False)),
    case("nll_loss_unbatched", lambda L, x: L.nn.functional.nll_loss(x, L.ints(2)), rand(4)),
]

# The linear map: a matmul and an add on most devices, one node where the device has the
# "linear" capability (its rule: linear), on one row, a batch and a batch of sequences, without
# a bias, and with the data or the weight constant.
LINEAR = [
    case("linear", lambda L, x, w, b: L.nn.functional.linear(x, w, b), rand(4, 5), rand(3, 5),
         rand(3)),
    case("linear_one_row_no_bias", lambda L, x, w: L.nn.functional.linear(x, w), rand(5),
         rand(3, 5)),
    case("linear_sequences_data_input", lambda L, x, w, b: L.nn.functional.linear(x, w, b),
         rand(2, 4, 5, grad=False), rand(3, 5), rand(3)),
    case("linear_constant_weight", lambda L, x, w: L.nn.functional.linear(x, w),
         rand(2, 4, 5), rand(3, 5, grad=False)),
    case("linear_two_layers", lambda L, x, w1, b1, w2: L.nn.functional.linear(
        L.nn.functional.linear(x, w1, b1).tanh(), w2), rand(4, 5), rand(6, 5), rand(6),
         rand(2, 6)),
]

CASES: list[Case] = (ELEMENTWISE + REDUCTIONS + MOVEMENT + INDEXING + LINALG + COMPOSED
                     + CONVOLUTION + ROWS + LOSSES + LINEAR)
