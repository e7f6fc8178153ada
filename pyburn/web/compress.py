"""Precompressed copies of a build's files (``name.gz``, ``name.br``) for hosts that serve them
as they are (``pyburn web serve``, nginx's ``gzip_static``/``brotli_static``, Netlify, ...), and
what a first visit transfers.

gzip comes with Python; brotli, a fifth smaller on Pyodide's runtime, needs the ``brotli``
package (``pip install 'pyburn[web]'``). Brotli at its best quality takes half a minute on
Pyodide's 9.6 MB of WebAssembly, so results are kept in the cache by content.
"""

from __future__ import annotations

import gzip
import hashlib
from dataclasses import dataclass
from pathlib import Path

from .pyodide import cache_dir

#: files smaller than this are served as they are: compression saves less than a header
SMALLEST = 1024
#: suffixes of files that are compressed already
COMPRESSED = frozenset({".gz", ".br", ".png", ".jpg", ".jpeg", ".webp", ".woff2"})


def brotli_module() -> object | None:
    """The ``brotli`` package, or None where it is not installed."""
    try:
        import brotli  # type: ignore[import-untyped]  # optional: pyburn[web]
    except ImportError:
        return None
    return brotli


def _cached(kind: str, data: bytes, make: object) -> bytes:
    """`make(data)`, kept in the cache under the digest of `data` and `kind`."""
    digest = hashlib.sha256(data).hexdigest()
    path = cache_dir() / "compressed" / f"{digest}.{kind}"
    if path.is_file():
        return path.read_bytes()
    result = make(data)  # type: ignore[operator]
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_suffix(f".{kind}.part")
    scratch.write_bytes(result)
    scratch.replace(path)
    return result


def precompress(root: Path, brotli_quality: int = 11) -> bool:
    """Write ``.gz`` (and with brotli installed ``.br``, where smaller) beside every file of
    `root` worth compressing. Returns whether brotli was at hand."""
    brotli = brotli_module()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        if path.suffix in COMPRESSED or path.stat().st_size < SMALLEST:
            continue
        data = path.read_bytes()
        gz = _cached("gz", data, lambda d: gzip.compress(d, 9, mtime=0))
        path.with_name(path.name + ".gz").write_bytes(gz)
        if brotli is not None:
            br = _cached(f"q{brotli_quality}.br", data,
                         lambda d: brotli.compress(d, quality=brotli_quality))  # type: ignore[attr-defined]
            if len(br) < len(gz):  # (at low qualities brotli can lose to gzip -9)
                path.with_name(path.name + ".br").write_bytes(br)
    return brotli is not None


@dataclass(frozen=True)
class Transfer:
    """One file of a first visit: its size as it is, gzip'd and brotli'd (the size as it is
    where the file is not worth compressing or no .br was written)."""

    name: str
    raw: int
    gzip: int
    brotli: int


def first_visit(root: Path, names: list[str]) -> list[Transfer]:
    """What fetching each file of `names` (relative to `root`) costs, precompressed where
    `precompress` compressed it."""
    rows = []
    for name in names:
        path = root / name
        raw = path.stat().st_size
        gz = _size(path, ".gz", raw)
        rows.append(Transfer(name, raw, gz, _size(path, ".br", gz)))
    return rows


def _size(path: Path, suffix: str, fallback: int) -> int:
    """The size of `path`'s copy with `suffix` added, or `fallback` where there is none."""
    other = path.with_name(path.name + suffix)
    return other.stat().st_size if other.is_file() else fallback
