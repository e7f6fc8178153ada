// pyburn's WGSL helper library. A kernel that calls one of these functions gets its
// definition linked in (pyburn/backends/wgpu/templates.py), so each function is compiled only
// where it is used. Names start with `pb_`; a suffix _f32, _i32 or _u32 names the compute
// type of the variant (op expressions in pyburn/ops/elementwise.py pick one with {{T}}).
//
// Why these exist: GPU compilers may assume that floats are never NaN (Mesa's llvmpipe folds
// `x != x` to false), WGSL leaves integer division by zero and out-of-range conversions to
// the implementation, and its builtins lack expm1, log1p, erf and accurate small-argument
// sinh/tanh. Every helper gives the IEEE/numpy answer that the flex and cpu backends give.
//
// Conventions: a function that reads `info` expects the kernel to declare
// `@group(0) @binding(0) var<storage, read> info: array<i32>;` (every pyburn kernel does).

// Element `i` of the kernel's storage buffer `{{buffer}}`, in the compute type (f16 read as
// f32): the one loader of every buffer, made for each pb_load_<name> a kernel calls from the
// declaration of <name> (`templates.link`).
fn pb_load_{{buffer}}(i: i32) -> {{T}} {
    let v = {{buffer}}[i];
    return {{load}};
}

// Linear index of this workgroup in a grid split over y and z (a dimension holds at most
// 65,535 workgroups).
fn pb_group(wid: vec3<u32>, nwg: vec3<u32>) -> i32 {
    return i32(wid.x + nwg.x * (wid.y + nwg.y * wid.z));
}

// Row-major coordinates of flat index `i` in a 3-d box whose sizes are at info[sizes..].
fn pb_unravel3(i: i32, sizes: i32) -> vec3<i32> {
    let plane = info[sizes + 1] * info[sizes + 2];
    return vec3<i32>(i / plane, (i / info[sizes + 2]) % info[sizes + 1], i % info[sizes + 2]);
}

// Storage offset (relative) of element `i`, counted row-major over `rank` dims whose sizes
// are at info[dims..] and whose strides are at info[strides..].
fn pb_strided(i: i32, rank: i32, dims: i32, strides: i32) -> i32 {
    var rest = i;
    var at = 0;
    for (var d = rank - 1; d >= 0; d--) {
        let size = info[dims + d];
        at += (rest % size) * info[strides + d];
        rest /= size;
    }
    return at;
}

// Where operand k of a matmul kernel (matmul*.wgsl) starts for batch
// `batch`, and its stride along dim d (0 M, 1 N, 2 K). Their info is [M, N, K, batches,
// batch rank B, batch shape[B], then per operand (out, a, b, then the epilogue's): offset,
// batch strides[B], strides along M, N and K].
fn pb_matmul_base(batch: i32, k: i32) -> i32 {
    let rank = info[4];
    let at = 5 + rank + k * (rank + 4);
    return info[at] + pb_strided(batch, rank, 5, at + 1);
}

fn pb_matmul_stride(k: i32, d: i32) -> i32 {
    let rank = info[4];
    return info[5 + rank + k * (rank + 4) + 1 + rank + d];
}

// The (image, output coordinates along d, h and w) of four columns j4 of a convolution kernel
// (conv.wgsl, conv_tiled.wgsl), whose columns are the output positions of every image in
// turn; their info holds the output sizes at [3, 6).
fn pb_conv_columns(j4: vec4<i32>) -> array<vec4<i32>, 4> {
    let plane = info[4] * info[5];
    let q4 = j4 % vec4<i32>(info[3] * plane);
    return array<vec4<i32>, 4>(j4 / vec4<i32>(info[3] * plane), q4 / vec4<i32>(plane),
                               (q4 / vec4<i32>(info[5])) % vec4<i32>(info[4]),
                               q4 % vec4<i32>(info[5]));
}

// The input offsets along spatial dim d of a convolution kernel's (conv.wgsl,
// conv_tiled.wgsl) four columns at output coordinates q along d, for kernel coordinate k: the
// input position is num / D with num = q * A + k * B + C, present when num >= 0,
// num % D == 0 and num / D < the input's size; -1 where it is not (padding, or an offset a
// transposed convolution's stride skips; a present offset is >= 0, the input's strides are).
// Their info holds the input sizes at [6, 9), A, B, C, D at [12, 24) and the input's spatial
// strides at [44, 47).
fn pb_conv_along(q: vec4<i32>, k: i32, d: i32) -> vec4<i32> {
    let num = q * info[12 + d] + vec4<i32>(k * info[15 + d] + info[18 + d]);
    let step = info[21 + d];
    let size = vec4<i32>(info[6 + d]);
    let stride = info[44 + d];
    if (step == 1) {  // every convolution: no division (slow on CPU drivers)
        return select(vec4<i32>(-1), num * stride, (num >= vec4<i32>(0)) & (num < size));
    }
    let p = num / vec4<i32>(step);
    let ok = (num >= vec4<i32>(0)) & (p < size) & (num % vec4<i32>(step) == vec4<i32>(0));
    return select(vec4<i32>(-1), p * stride, ok);
}

// ---- classification (bit tests: immune to compilers that assume no NaN) ----------------
fn pb_isnan(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
}

fn pb_isinf(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u;
}

fn pb_isfinite(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) < 0x7f800000u;
}

// Through a `let`: a NaN or an infinity written as a constant expression is a compile
// error in WGSL (Chrome's compiler enforces it; wgpu's does not).
fn pb_nan() -> f32 {
    let bits = 0x7fc00000u;
    return bitcast<f32>(bits);
}

fn pb_inf() -> f32 {
    let bits = 0x7f800000u;
    return bitcast<f32>(bits);
}

fn pb_isnan_f32(x: f32) -> bool {
    return pb_isnan(x);
}

fn pb_isnan_i32(x: i32) -> bool {
    return false;
}

fn pb_isnan_u32(x: u32) -> bool {
    return false;
}

fn pb_isinf_f32(x: f32) -> bool {
    return pb_isinf(x);
}

fn pb_isinf_i32(x: i32) -> bool {
    return false;
}

fn pb_isinf_u32(x: u32) -> bool {
    return false;
}

fn pb_isfinite_f32(x: f32) -> bool {
    return pb_isfinite(x);
}

fn pb_isfinite_i32(x: i32) -> bool {
    return true;
}

fn pb_isfinite_u32(x: u32) -> bool {
    return true;
}

// Whether neither operand is NaN: comparisons are `pb_ordered_T(a, b) && a < b`.
fn pb_ordered_f32(a: f32, b: f32) -> bool {
    return !(pb_isnan(a) || pb_isnan(b));
}

fn pb_ordered_i32(a: i32, b: i32) -> bool {
    return true;
}

fn pb_ordered_u32(a: u32, b: u32) -> bool {
    return true;
}

// Truth value of a float: nonzero, NaN included.
fn pb_truth_f32(x: f32) -> bool {
    return pb_isnan(x) || x != 0.0;
}

fn pb_truth_i32(x: i32) -> bool {
    return x != 0;
}

fn pb_truth_u32(x: u32) -> bool {
    return x != 0u;
}

// ---- conversions ------------------------------------------------------------------------
// f32 to f16, rounding finite values beyond the f16 range to infinity (WGSL leaves the
// conversion of out-of-range values to the implementation; infinities and NaN themselves
// convert as IEEE says on every driver seen so far, and WGSL cannot spell an f16 NaN).
fn pb_to_f16(x: f32) -> f16 {
    if (pb_isfinite(x) && abs(x) >= 65520.0) {
        return f16(select(pb_inf(), -pb_inf(), x < 0.0));
    }
    return f16(x);
}

// int(x) wrapped to 32 bits, as Python's int() followed by two's complement wrapping:
// truncation toward zero, NaN and infinities give 0.
fn pb_f32_to_i32(x: f32) -> i32 {
    let bits = bitcast<u32>(x);
    let magnitude = bits & 0x7fffffffu;
    if (magnitude >= 0x7f800000u) {
        return 0;
    }
    if (magnitude < 0x4f000000u) {  // |x| < 2**31: the conversion truncates exactly
        return i32(x);
    }
    // |x| = mantissa * 2**shift with shift >= 8; only the low 32 bits of that survive.
    let shift = (magnitude >> 23u) - 150u;
    if (shift >= 32u) {
        return 0;
    }
    let low = i32(((magnitude & 0x7fffffu) | 0x800000u) << shift);
    return select(low, -low, x < 0.0);
}

// ---- arithmetic -------------------------------------------------------------------------
fn pb_neg_f32(x: f32) -> f32 {
    return -x;
}

fn pb_neg_i32(x: i32) -> i32 {
    return -x;
}

fn pb_neg_u32(x: u32) -> u32 {
    return 0u - x;
}

fn pb_sign_f32(x: f32) -> f32 {
    return select(sign(x), x, pb_isnan(x));
}

fn pb_sign_i32(x: i32) -> i32 {
    return sign(x);
}

fn pb_sign_u32(x: u32) -> u32 {
    return min(x, 1u);
}

fn pb_minimum_f32(a: f32, b: f32) -> f32 {
    if (pb_isnan(a)) {
        return a;
    }
    if (pb_isnan(b)) {
        return b;
    }
    return select(b, a, a <= b);
}

fn pb_minimum_i32(a: i32, b: i32) -> i32 {
    return min(a, b);
}

fn pb_minimum_u32(a: u32, b: u32) -> u32 {
    return min(a, b);
}

fn pb_maximum_f32(a: f32, b: f32) -> f32 {
    if (pb_isnan(a)) {
        return a;
    }
    if (pb_isnan(b)) {
        return b;
    }
    return select(b, a, a >= b);
}

fn pb_maximum_i32(a: i32, b: i32) -> i32 {
    return max(a, b);
}

fn pb_maximum_u32(a: u32, b: u32) -> u32 {
    return max(a, b);
}

// C's fmod: the remainder of truncated division, with the sign of a. The quotient may be
// off by one after rounding; the remainder is corrected into range, and fma keeps a - q * b
// exact for the right q.
fn pb_fmod_f32(a: f32, b: f32) -> f32 {
    if (pb_isnan(a) || pb_isnan(b) || pb_isinf(a) || b == 0.0) {
        return pb_nan();
    }
    if (pb_isinf(b)) {
        return a;
    }
    let m = abs(b);
    var r = fma(-trunc(a / b), b, a);
    if (a >= 0.0) {
        if (r < 0.0) {
            r += m;
        }
        if (r >= m) {
            r -= m;
        }
    } else {
        if (r > 0.0) {
            r -= m;
        }
        if (r <= -m) {
            r += m;
        }
    }
    return r;
}

// Python's and numpy's remainder: the sign of b.
fn pb_remainder_f32(a: f32, b: f32) -> f32 {
    let r = pb_fmod_f32(a, b);
    if (pb_isnan(r)) {
        return r;
    }
    if (r == 0.0) {
        return select(0.0, -0.0, b < 0.0);
    }
    if ((b < 0.0) != (r < 0.0)) {
        return r + b;
    }
    return r;
}

// Python's and numpy's floor division: the quotient that goes with pb_remainder_f32.
fn pb_floordiv_f32(a: f32, b: f32) -> f32 {
    if (b == 0.0) {
        return a / b;
    }
    let r = pb_fmod_f32(a, b);
    var q = (a - r) / b;
    if (r != 0.0 && (b < 0.0) != (r < 0.0)) {
        q -= 1.0;
    }
    if (q == 0.0) {
        return select(0.0, -0.0, (a < 0.0) != (b < 0.0));
    }
    let down = floor(q);
    return select(down, down + 1.0, q - down > 0.5);
}

// i32 division through unsigned magnitudes: wgpu on Mesa 22.3's OpenGL llvmpipe (what it
// takes where no Vulkan driver is installed) divided negative i32 as if unsigned (-14 % 7
// gave 4, floor(-14 / 7) -3); lavapipe divides right, and u32 division is right on both
fn pb_magnitude_i32(a: i32) -> u32 {
    return select(u32(a), 0u - u32(a), a < 0);
}

// a / b rounded toward zero, as WGSL's i32 division (b != 0)
fn pb_truncdiv_i32(a: i32, b: i32) -> i32 {
    let q = i32(pb_magnitude_i32(a) / pb_magnitude_i32(b));
    return select(q, -q, (a < 0) != (b < 0));
}

// a - b * pb_truncdiv_i32(a, b), with a's sign, as WGSL's i32 % (b != 0)
fn pb_truncrem_i32(a: i32, b: i32) -> i32 {
    let r = i32(pb_magnitude_i32(a) % pb_magnitude_i32(b));
    return select(r, -r, a < 0);
}

fn pb_fmod_i32(a: i32, b: i32) -> i32 {
    if (b == 0) {
        return 0;
    }
    return pb_truncrem_i32(a, b);
}

fn pb_remainder_i32(a: i32, b: i32) -> i32 {
    if (b == 0) {
        return 0;
    }
    let r = pb_truncrem_i32(a, b);
    return select(r, r + b, r != 0 && (r < 0) != (b < 0));
}

fn pb_floordiv_i32(a: i32, b: i32) -> i32 {
    if (b == 0) {
        return 0;
    }
    let q = pb_truncdiv_i32(a, b);
    return select(q, q - 1, pb_truncrem_i32(a, b) != 0 && (a < 0) != (b < 0));
}

fn pb_fmod_u32(a: u32, b: u32) -> u32 {
    return select(a % b, 0u, b == 0u);
}

fn pb_remainder_u32(a: u32, b: u32) -> u32 {
    return select(a % b, 0u, b == 0u);
}

fn pb_floordiv_u32(a: u32, b: u32) -> u32 {
    return select(a / b, 0u, b == 0u);
}

// Whether a float is an odd integer (every float from 2**24 on is even).
fn pb_is_odd_integer(x: f32) -> bool {
    return abs(x) < 16777216.0 && trunc(x) == x && fma(-2.0, floor(x * 0.5), x) == 1.0;
}

// C99 pow, special cases included (pow(x, 0) = 1 and pow(1, y) = 1 even for NaN).
fn pb_pow_f32(a: f32, b: f32) -> f32 {
    if (b == 0.0 || a == 1.0) {
        return 1.0;
    }
    if (pb_isnan(a) || pb_isnan(b)) {
        return pb_nan();
    }
    let odd = pb_is_odd_integer(b);
    if (pb_isinf(b)) {
        let m = abs(a);
        if (m == 1.0) {
            return 1.0;
        }
        return select(0.0, pb_inf(), (m > 1.0) == (b > 0.0));
    }
    if (a == 0.0 || pb_isinf(a)) {
        // 0 and inf are reciprocal: |result| is inf or 0, and the sign of a survives odd b.
        let big = (a == 0.0) == (b < 0.0);
        let magnitude = select(0.0, pb_inf(), big);
        return select(magnitude, -magnitude, odd && (bitcast<u32>(a) >> 31u) == 1u);
    }
    if (a < 0.0) {
        if (trunc(b) != b) {
            return pb_nan();
        }
        let m = pow(-a, b);
        return select(m, -m, odd);
    }
    return pow(a, b);
}

// Integer power by squaring, wrapping like every integer op; a negative exponent gives the
// truncated reciprocal (1 for a == 1, +-1 for a == -1, else 0).
fn pb_pow_i32(a: i32, b: i32) -> i32 {
    if (b < 0) {
        if (a == 1) {
            return 1;
        }
        if (a == -1) {
            return select(1, -1, (b & 1) == 1);
        }
        return 0;
    }
    var result = 1;
    var base = a;
    var e = b;
    while (e != 0) {
        if ((e & 1) == 1) {
            result *= base;
        }
        base *= base;
        e >>= 1u;
    }
    return result;
}

fn pb_pow_u32(a: u32, b: u32) -> u32 {
    var result = 1u;
    var base = a;
    var e = b;
    while (e != 0u) {
        if ((e & 1u) == 1u) {
            result *= base;
        }
        base *= base;
        e >>= 1u;
    }
    return result;
}

// Shifts by any amount: << past the width gives 0, >> is arithmetic (sign-filling) for i32.
fn pb_shl_i32(a: i32, b: i32) -> i32 {
    return select(0, a << u32(b & 31), b >= 0 && b < 32);
}

fn pb_shr_i32(a: i32, b: i32) -> i32 {
    return a >> u32(select(31, b, b >= 0 && b < 32));
}

fn pb_shl_u32(a: u32, b: u32) -> u32 {
    return select(0u, a << (b & 31u), b < 32u);
}

fn pb_shr_u32(a: u32, b: u32) -> u32 {
    return select(0u, a >> (b & 31u), b < 32u);
}

// ---- exp and log with IEEE special values ------------------------------------------------
// WGSL leaves a builtin's result undefined for NaN or infinite arguments and on overflow, and
// implementations differ: Chrome's (SwiftShader) exp(NaN) is inf, log2(NaN) 128.6, log2(0)
// -127 and log(-x) log(x). Within their domain the builtins are accurate enough (WGSL
// promises 3 + 2|x| ULP for exp, 3 ULP or 2^-21 absolute for log), so these only guard.
fn pb_exp(x: f32) -> f32 {
    if (pb_isnan(x)) {
        return x;
    }
    if (x > 88.72284) {  // past log(largest float32)
        return pb_inf();
    }
    if (x < -104.0) {  // below log(smallest subnormal / 2)
        return 0.0;
    }
    return exp(x);
}

fn pb_exp2(x: f32) -> f32 {
    if (pb_isnan(x)) {
        return x;
    }
    if (x >= 128.0) {
        return pb_inf();
    }
    if (x < -150.0) {
        return 0.0;
    }
    return exp2(x);
}

// NaN for NaN and negative x (-0 included in neither: log(-0) is -inf), -inf at 0, inf at inf.
fn pb_log_special(x: f32) -> f32 {
    if (pb_isnan(x) || x < 0.0) {
        return pb_nan();
    }
    return select(x, -pb_inf(), x == 0.0);
}

fn pb_log(x: f32) -> f32 {
    if (!pb_isfinite(x) || x <= 0.0) {
        return pb_log_special(x);
    }
    let d = x - 1.0;  // exact for x in [0.5, 2]
    if (abs(d) < 0.25) {
        return pb_log_near_one(d, x + 1.0);
    }
    return log(x);
}

// log(1 + d) for |d| < 0.25, given 2 + d, to a few ulps relative: WGSL only bounds log's
// absolute error near 1 (2^-21), and SwiftShader's is that large, so log(0.9999) came out
// 1e-4 off relative. log(1 + d) = 2 atanh(s), s = d / (2 + d), |s| < 1/7: the series to s^9
// leaves 1e-9.
fn pb_log_near_one(d: f32, two_plus_d: f32) -> f32 {
    let s = d / two_plus_d;
    let s2 = s * s;
    return 2.0 * s * (1.0 + s2 * (1.0 / 3.0 + s2 * (0.2 + s2 * (1.0 / 7.0 + s2 * (1.0 / 9.0)))));
}

fn pb_log2(x: f32) -> f32 {
    if (!pb_isfinite(x) || x <= 0.0) {
        return pb_log_special(x);
    }
    return log2(x);
}

// ---- transcendental functions that WGSL lacks or computes inaccurately near zero ---------
// exp(x) - 1: a Taylor polynomial where exp(x) - 1 would cancel (|x| < 0.5; the first
// omitted term is below 3e-10 of the result).
fn pb_expm1(x: f32) -> f32 {
    if (abs(x) < 0.5) {
        let p = 1.0 + x * (0.5 + x * (1.0 / 6.0 + x * (1.0 / 24.0 + x * (1.0 / 120.0
            + x * (1.0 / 720.0 + x * (1.0 / 5040.0 + x * (1.0 / 40320.0
            + x * (1.0 / 362880.0))))))));
        return x * p;
    }
    return pb_exp(x) - 1.0;
}

// log(1 + x): Kahan's correction for the rounding of 1 + x.
fn pb_log1p(x: f32) -> f32 {
    if (!pb_isfinite(x) || x <= -1.0) {
        return pb_log_special(x + 1.0);
    }
    if (abs(x) < 0.25) {
        return pb_log_near_one(x, 2.0 + x);
    }
    let u = 1.0 + x;
    return log(u) * (x / (u - 1.0));
}

fn pb_sinh(x: f32) -> f32 {
    if (!pb_isfinite(x)) {
        return x;
    }
    let a = abs(x);
    var s: f32;
    if (a < 1.0) {
        let t = pb_expm1(a);
        s = 0.5 * (t + t / (t + 1.0));
    } else if (a > 80.0) {
        s = pb_exp(a - 0.6931471805599453);  // e**a / 2 without overflowing early
    } else {
        let e = exp(a);
        s = 0.5 * (e - 1.0 / e);
    }
    return select(s, -s, x < 0.0);
}

fn pb_cosh(x: f32) -> f32 {
    let a = abs(x);
    if (!pb_isfinite(x)) {
        return a;
    }
    if (a > 80.0) {
        return pb_exp(a - 0.6931471805599453);
    }
    let e = exp(a);
    return 0.5 * (e + 1.0 / e);
}

// ---- sin, cos and tan ---------------------------------------------------------------------
// WGSL promises sin and cos only to 2^-11 absolute on [-pi, pi] and nothing outside it;
// Chrome's (SwiftShader) are off by 2e-5 at x = 1. These reduce x to r = x - k * pi/2 with
// |r| <= pi/4, then evaluate Taylor polynomials of r (the first omitted terms are below
// 1e-11): within 1.1e-7 of the true value for every finite float32.
// The reduction, returned as (r, k mod 4): below 2^16, Cody and Waite's, with pi/2 in four
// float32 parts, the first three of 8 bits, so that each k * part is exact (|k| < 2^16);
// from 2^16 on, Payne and Hanek's (pb_half_pi_reduce_large).
fn pb_half_pi_reduce(x: f32) -> vec2<f32> {
    if (abs(x) >= 65536.0) {
        return pb_half_pi_reduce_large(x);
    }
    let k = round(x * 0.63661977);
    var r = x - k * 1.5703125;
    r -= k * 4.8255920410156250e-4;
    r -= k * 1.2665987014770508e-6;
    r -= k * 9.9209362947050300e-10;
    return vec2<f32>(r, k - 4.0 * floor(k * 0.25));  // exact: k is an integer
}

// The full 64-bit product of two u32, as (high word, low word).
fn pb_mul_wide(a: u32, b: u32) -> vec2<u32> {
    let ll = (a & 0xffffu) * (b & 0xffffu);
    let lh = (a & 0xffffu) * (b >> 16u);
    let hl = (a >> 16u) * (b & 0xffffu);
    let mid = (ll >> 16u) + (lh & 0xffffu) + (hl & 0xffffu);
    let high = (a >> 16u) * (b >> 16u) + (lh >> 16u) + (hl >> 16u) + (mid >> 16u);
    return vec2<u32>(high, (mid << 16u) | (ll & 0xffffu));
}

// pb_half_pi_reduce for finite |x| >= 2^16, in integers: |x| = m * 2^e (m the 24-bit
// mantissa), and x * 2/pi mod 4 needs only the bits of 2/pi from weight 2^(1-e) on (earlier
// ones add multiples of 4). m times a 96-bit window of 2/pi starting at weight 2^(31-e) is
// |x| * 2/pi * 2^64, less such multiples, to within 2^-40: its second word holds k mod 4,
// its last two the fraction.
fn pb_half_pi_reduce_large(x: f32) -> vec2<f32> {
    // 2/pi in binary after 64 zero bits: its bit of weight 2^-j is bit j + 63 here
    var table = array<u32, 9>(0u, 0u, 0xa2f9836eu, 0x4e441529u, 0xfc2757d1u, 0xf534ddc0u,
                              0xdb629599u, 0x3c439041u, 0xfe5163abu);
    let bits = bitcast<u32>(x) & 0x7fffffffu;
    let m = (bits & 0x7fffffu) | 0x800000u;
    let start = (bits >> 23u) - 118u;  // the window's first bit: (31 - e) + 63
    let at = start >> 5u;
    let shift = start & 31u;
    // (word >> 1) >> (31 - shift): a shift by 32 - shift that gives 0 for shift 0
    let w0 = (table[at] << shift) | ((table[at + 1u] >> 1u) >> (31u - shift));
    let w1 = (table[at + 1u] << shift) | ((table[at + 2u] >> 1u) >> (31u - shift));
    let w2 = (table[at + 2u] << shift) | ((table[at + 3u] >> 1u) >> (31u - shift));
    let p1 = pb_mul_wide(m, w1);
    let p2 = pb_mul_wide(m, w2);
    var low = p2.y;
    var high = p1.y + p2.x;
    var q = (m * w0 + p1.x + select(0u, 1u, high < p1.y)) & 3u;
    var sign = 1.0;
    if (high >= 0x80000000u) {  // a fraction of one half or more: count from the next k
        q = (q + 1u) & 3u;
        low = ~low + 1u;
        high = ~high + select(0u, 1u, low == 0u);
        sign = -1.0;
    }
    let r = sign * (f32(high) + f32(low) * 2.3283064e-10) * 2.3283064e-10 * 1.5707964;
    if (x < 0.0) {
        return vec2<f32>(-r, f32((4u - q) & 3u));
    }
    return vec2<f32>(r, f32(q));
}

// sin(r) and cos(r) for |r| <= pi/4 (a little more after rounding).
fn pb_sincos_reduced(r: f32) -> vec2<f32> {
    let r2 = r * r;
    let s = r + r * r2 * (-1.0 / 6.0 + r2 * (1.0 / 120.0 + r2 * (-1.0 / 5040.0
        + r2 * (1.0 / 362880.0 + r2 * (-1.0 / 39916800.0)))));
    let c = 1.0 - 0.5 * r2 + r2 * r2 * (1.0 / 24.0 + r2 * (-1.0 / 720.0 + r2 * (1.0 / 40320.0
        + r2 * (-1.0 / 3628800.0 + r2 * (1.0 / 479001600.0)))));
    return vec2<f32>(s, c);
}

// (sin x, cos x) of a finite x.
fn pb_sincos(x: f32) -> vec2<f32> {
    let reduced = pb_half_pi_reduce(x);
    let sc = pb_sincos_reduced(reduced.x);
    let q = u32(reduced.y);
    // a quarter turn maps (sin, cos) to (cos, -sin)
    let turned = select(sc, vec2<f32>(sc.y, -sc.x), (q & 1u) == 1u);
    return select(turned, -turned, q >= 2u);
}

fn pb_sin(x: f32) -> f32 {
    if (!pb_isfinite(x)) {
        return pb_nan();
    }
    if (abs(x) < 0.000244140625) {  // 2^-12: sin x rounds to x (and -0 stays -0)
        return x;
    }
    return pb_sincos(x).x;
}

fn pb_cos(x: f32) -> f32 {
    if (!pb_isfinite(x)) {
        return pb_nan();
    }
    return pb_sincos(x).y;
}

fn pb_tan(x: f32) -> f32 {
    if (!pb_isfinite(x)) {
        return pb_nan();
    }
    if (abs(x) < 0.000244140625) {
        return x;
    }
    let sc = pb_sincos(x);
    return sc.x / sc.y;
}

fn pb_tanh(x: f32) -> f32 {
    let a = abs(x);
    var t = 1.0;
    if (a < 9.0 || pb_isnan(x)) {  // from 9 on, tanh rounds to 1
        let e = pb_expm1(2.0 * a);
        t = e / (e + 2.0);
    }
    return select(t, -t, x < 0.0);
}

fn pb_asinh(x: f32) -> f32 {
    let a = abs(x);
    var r: f32;
    if (a > 1e18) {
        r = pb_log(a) + 0.6931471805599453;
    } else {
        let s = a * a;
        r = pb_log1p(a + s / (1.0 + sqrt(1.0 + s)));
    }
    return select(r, -r, x < 0.0);
}

fn pb_acosh(x: f32) -> f32 {
    if (x < 1.0) {
        return pb_nan();
    }
    if (x > 1e18) {
        return pb_log(x) + 0.6931471805599453;
    }
    let t = x - 1.0;
    return pb_log1p(t + sqrt(t * (x + 1.0)));
}

fn pb_atanh(x: f32) -> f32 {
    let a = abs(x);
    if (a > 1.0) {
        return pb_nan();
    }
    let r = 0.5 * pb_log1p(2.0 * a / (1.0 - a));
    return select(r, -r, x < 0.0);
}

// Inverse trigonometric functions from atan, the one builtin llvmpipe computes accurately
// (its asin and acos are off by 2e-4): the arguments below lose nothing where they matter.
fn pb_atan(x: f32) -> f32 {
    return select(atan(x), x, pb_isnan(x));
}

fn pb_asin(x: f32) -> f32 {
    if (!(abs(x) <= 1.0) || pb_isnan(x)) {
        return pb_nan();
    }
    return atan(x / sqrt((1.0 - x) * (1.0 + x)));
}

fn pb_acos(x: f32) -> f32 {
    if (!(abs(x) <= 1.0) || pb_isnan(x)) {
        return pb_nan();
    }
    return 2.0 * atan(sqrt((1.0 - x) / (1.0 + x)));
}

fn pb_sign_bit(x: f32) -> bool {
    return (bitcast<u32>(x) >> 31u) == 1u;
}

// The angle of the point (b, a), C99's atan2 with every signed zero and infinity.
fn pb_atan2(a: f32, b: f32) -> f32 {
    let pi = 3.141592653589793;
    if (pb_isnan(a) || pb_isnan(b)) {
        return pb_nan();
    }
    var r: f32;
    if (pb_isinf(a) && pb_isinf(b)) {
        r = select(0.25 * pi, 0.75 * pi, b < 0.0);
    } else if (a == 0.0 || pb_isinf(b)) {
        r = select(0.0, pi, pb_sign_bit(b));
        if (a != 0.0) {  // finite a, infinite b
            r = select(0.0, pi, b < 0.0);
        }
    } else if (b == 0.0 || pb_isinf(a)) {
        r = 0.5 * pi;
    } else {
        r = atan(abs(a / b));
        if (b < 0.0) {
            r = pi - r;
        }
    }
    return select(r, -r, pb_sign_bit(a));
}

// The error function: for |x| < 2 the series with positive terms
// erf(x) = 2/sqrt(pi) * x * exp(-x^2) * sum_n (2x^2)^n / (1*3*...*(2n+1)), summed from the
// smallest term; for 2 <= |x| < 4 Laplace's continued fraction for erfc; from 4 on erf
// rounds to +-1.
fn pb_erf(x: f32) -> f32 {
    let a = abs(x);
    if (pb_isnan(x)) {
        return x;
    }
    var r = 1.0;
    if (a < 2.0) {
        let u = 2.0 * a * a;
        var term_sum = 0.0;
        for (var n = 30; n >= 0; n--) {
            term_sum = 1.0 + term_sum * u / f32(2 * n + 3);
        }
        r = 1.1283791670955126 * a * exp(-a * a) * term_sum;
    } else if (a < 4.0) {
        var tail = a;
        for (var k = 40; k > 0; k--) {
            tail = a + (f32(k) * 0.5) / tail;
        }
        r = 1.0 - exp(-a * a) * 0.5641895835477563 / tail;
    }
    return select(r, -r, x < 0.0);
}
