"""Derive the constants and polynomial coefficients of pyburn/backends/wasm/mathlib.py.

Run ``python scripts/fit_mathlib.py``: it prints every constant and coefficient tuple that
mathlib.py uses, with the fit's worst weighted error. Each polynomial is a weighted minimax
fit in float64 on Chebyshev nodes (Lawson's algorithm: iteratively reweighted least squares),
the weight chosen so that the error measured is the relative error of the function that the
polynomial serves. Float32 coefficients are rounded one at a time, lowest degree first, the
higher ones refitted after each rounding, so that the rounding costs little accuracy. The
exact values (pi, 2/pi, ln 2, erfc) come from mpmath at 300 bits.
"""

from __future__ import annotations

from collections.abc import Callable

import mpmath
import numpy as np

mpmath.mp.prec = 300
Array = np.ndarray


def nodes(lo: float, hi: float, n: int = 4000) -> Array:
    """Chebyshev nodes of the first kind on [lo, hi]."""
    k = np.arange(n)
    return (lo + hi) / 2 + (hi - lo) / 2 * np.cos(np.pi * (k + 0.5) / n)


def lawson(basis: Array, target: Array, weight: Array, iters: int = 60) -> Array:
    """Coefficients minimizing max |weight * (basis @ c - target)| (approximately)."""
    lw = np.full(len(target), 1.0 / len(target))
    c = np.zeros(basis.shape[1])
    for _ in range(iters):
        s = np.sqrt(lw) * weight
        c = np.linalg.lstsq(basis * s[:, None], target * s, rcond=None)[0]
        err = np.abs(weight * (basis @ c - target)) + 1e-300
        lw = lw * err
        lw /= lw.sum()
    return c


def fit(g: Callable[[Array], Array], lo: float, hi: float, degree: int,
        weight: Callable[[Array], Array], f32: bool = True) -> tuple[list[float], float]:
    """Polynomial coefficients (lowest degree first) of g on [lo, hi]: float32 ones where
    `f32`, rounded lowest degree first with refits; and the worst weighted error."""
    t = nodes(lo, hi)
    basis = np.vander(t, degree + 1, increasing=True)
    target, w = g(t), weight(t)
    fixed: list[float] = []
    for j in range(degree + 1 if f32 else 0):
        rest = target - basis[:, :j] @ np.array(fixed) if fixed else target
        c = lawson(basis[:, j:], rest, w)
        fixed.append(float(np.float32(c[0])))
    coeffs = fixed if f32 else [float(v) for v in lawson(basis, target, w)]
    return coeffs, float(np.max(np.abs(w * (basis @ np.array(coeffs) - target))))


def vec(fn: Callable) -> Callable[[Array], Array]:
    """An mpmath function on float64 arrays."""
    return lambda t: np.array([float(fn(mpmath.mpf(float(v)))) for v in t])


def split(value: mpmath.mpf, bits: int, parts: int) -> list[float]:
    """`value` as a sum of `parts` floats of `bits` significant bits each (the last one
    a float32 rounding of the rest)."""
    out: list[float] = []
    rest = value
    for k in range(parts):
        if k == parts - 1:
            out.append(float(np.float32(float(rest))))
        else:
            e = int(mpmath.floor(mpmath.log(abs(rest), 2)))
            piece = mpmath.nint(rest * mpmath.mpf(2) ** (bits - 1 - e)) / \
                mpmath.mpf(2) ** (bits - 1 - e)
            out.append(float(piece))
        rest -= out[-1]
    return out


def show(name: str, values: list[float], note: str = "") -> None:
    print(f"{name} = ({', '.join(repr(v) for v in values)},)" + (f"  # {note}" if note else ""))


def main() -> None:
    pi = mpmath.pi
    ln2 = mpmath.log(2)
    # ---- constants ----
    show("LN2_HI_LO", split(ln2, 16, 2), "k * hi exact for |k| < 256")
    show("PIO2_PARTS", split(pi / 2, 12, 4), "Cody-Waite: k * part exact for k < 4096")
    show("PIO2_HI_LO", split(pi / 2, 24, 2))
    show("PIO4_HI_LO", split(pi / 4, 24, 2))
    show("PI_HI_LO", split(pi, 24, 2))
    # 2/pi in pieces of 24 bits each: piece i holds the bits of weight 2^-(24i+1) ..
    # 2^-(24i+24), so that |x| * piece is exact in float64 for a float32 x
    two_over_pi = 2 / pi
    pieces = []
    for i in range(8):
        scaled = mpmath.floor(two_over_pi * mpmath.mpf(2) ** (24 * (i + 1)))
        pieces.append(float((scaled - mpmath.floor(two_over_pi * mpmath.mpf(2) ** (24 * i))
                             * 2 ** 24) / mpmath.mpf(2) ** (24 * (i + 1))))
    show("TWO_OVER_PI_PIECES", pieces)
    print(f"PIO2_F64 = {float(pi / 2)!r}")
    show("LOG2E_HI_LO", split(1 / ln2, 24, 2))
    print(f"LOG2E_F64 = {float(1 / ln2)!r}")
    print(f"LN2 = {float(ln2)!r}")
    print(f"E88_HALF = {float(np.float32(float(mpmath.exp(88) / 2)))!r}")
    print()

    # exp(r) = 1 + r + r^2 P(r), |r| <= ln2/2 (+ rounding slack)
    h = float(ln2) / 2 * 1.01
    c, e = fit(lambda r: (np.expm1(r) - r) / r**2, -h, h, 4, lambda r: r**2 / np.exp(r))
    show("EXP_P", c, f"err {e:.1e}")
    # 2^r = 1 + r Q(r), |r| <= 1/2
    c, e = fit(lambda r: np.expm1(r * np.log(2)) / r, -0.5, 0.5, 5, lambda r: r / 2**r)
    show("EXP2_Q", c, f"err {e:.1e}")
    # log(1 + f) = t (1 + z Q(z)), t = 2f / (2 + f), z = t^2 / 4, f in [sqrt(1/2) - 1,
    # sqrt(2) - 1]: log(1 + f) = 2 atanh(t / 2)
    zmax = (0.41421357 / 2.41421357) ** 2 * 1.01
    c, e = fit(lambda z: (np.arctanh(np.sqrt(z)) / np.sqrt(z) - 1) / z, 1e-12, zmax, 3,
               lambda z: z)
    show("LOG_Q", c, f"err {e:.1e}")
    # sin(r) = r + r z S(z), cos(r) = 1 - z/2 + z^2 C(z), z = r^2, |r| <= pi/4 (+ slack)
    zmax = (float(pi) / 4 * 1.01) ** 2
    c, e = fit(lambda z: (np.sin(np.sqrt(z)) / np.sqrt(z) - 1) / z, 1e-12, zmax, 3,
               lambda z: z)
    show("SIN_S", c, f"err {e:.1e}")
    c, e = fit(lambda z: (np.cos(np.sqrt(z)) - 1 + z / 2) / z**2, 1e-12, zmax, 3,
               lambda z: z**2 / np.cos(np.sqrt(z)))
    show("COS_C", c, f"err {e:.1e}")
    # atan(y) = y + y z P(z), z = y^2, |y| <= tan(pi/8)
    zmax = float(mpmath.tan(pi / 8)) ** 2 * 1.01
    c, e = fit(lambda z: (np.arctan(np.sqrt(z)) / np.sqrt(z) - 1) / z, 1e-12, zmax, 5,
               lambda z: z)
    show("ATAN_P", c, f"err {e:.1e}")
    # asin(u) = u + u z P(z), z = u^2, u in [0, 1/2]
    c, e = fit(lambda z: (np.arcsin(np.sqrt(z)) / np.sqrt(z) - 1) / z, 1e-12, 0.25, 5,
               lambda z: z * np.sqrt(z) / np.arcsin(np.sqrt(z)))
    show("ASIN_P", c, f"err {e:.1e}")
    # sinh(a) = a + a z P(z), z = a^2, a in [0, 1]
    c, e = fit(lambda z: (np.sinh(np.sqrt(z)) / np.sqrt(z) - 1) / z, 1e-12, 1.0, 4,
               lambda z: z * np.sqrt(z) / np.sinh(np.sqrt(z)))
    show("SINH_P", c, f"err {e:.1e}")
    # erf(a) = a + a E(z), z = a^2, a in [0, 1] (E(0) = 2/sqrt(pi) - 1: the leading
    # coefficient 2/sqrt(pi) split as 1 + E(0) so that its float32 rounding costs little)
    erf = vec(mpmath.erf)
    c, e = fit(lambda z: erf(np.sqrt(z)) / np.sqrt(z) - 1, 1e-12, 1.0, 8,
               lambda z: np.sqrt(z) / erf(np.sqrt(z)))
    show("ERF_E", c, f"err {e:.1e}")
    # erf(a) = 1 - exp(-a^2) R(1/a), a in [1, 4]; the weight makes the error that of erf
    erfcx = vec(lambda t: mpmath.erfc(1 / t) * mpmath.exp(1 / t**2))
    c, e = fit(erfcx, 0.25, 1.0, 8, lambda t: np.exp(-1 / t**2) / erf(1 / t))
    show("ERFC_R", c, f"err {e:.1e}")
    # float64 fits for pow: log(1 + f) = t (1 + z Q(z)) as above, and 2^g = 1 + g Q(g)
    zmax = (0.41421357 / 2.41421357) ** 2 * 1.01
    c, e = fit(lambda z: (np.arctanh(np.sqrt(z)) / np.sqrt(z) - 1) / z, 1e-12, zmax, 4,
               lambda z: z, f32=False)
    show("POW_LOG_Q", c, f"err {e:.1e}")
    c, e = fit(lambda g: np.expm1(g * np.log(2)) / g, -0.5, 0.5, 7, lambda g: g / 2**g,
               f32=False)
    show("POW_EXP2_Q", c, f"err {e:.1e}")


if __name__ == "__main__":
    main()
