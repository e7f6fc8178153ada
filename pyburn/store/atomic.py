"""Atomic file writes: a reader sees the old file or the new one, never a half-written one.

The bytes go to a temporary file in the target's folder (a rename is only atomic within one
file system), which is flushed and fsync'ed before ``os.replace`` puts it in place; then the
folder itself is fsync'ed so that the rename survives a power cut. Any failure on the way,
including KeyboardInterrupt, removes the temporary file and leaves the old file untouched.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable

#: bytes of randomness in a temporary file's name
_TOKEN_BYTES = 6


def atomic_write(path: str | os.PathLike[str], chunks: Iterable[bytes | bytearray | memoryview]
                 ) -> None:
    """Write the concatenation of `chunks` to `path`, atomically.

    `chunks` may be a generator: it is consumed while writing, so a large file never has to
    be in memory at once. The new file gets the permissions of a file created normally
    (0o666 less the umask); an existing file at `path` is replaced.

    >>> import os, tempfile
    >>> target = os.path.join(tempfile.mkdtemp(), "hello.txt")
    >>> atomic_write(target, [b"hello, ", b"world"])
    >>> open(target, "rb").read()
    b'hello, world'
    """
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    temp, fd = _create_temp(folder, os.path.basename(path))
    try:
        with os.fdopen(fd, "wb") as file:
            for chunk in chunks:
                file.write(chunk)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    _fsync_folder(folder)


def _create_temp(folder: str, name: str) -> tuple[str, int]:
    """A new, exclusively created file next to the target: ``.NAME.RANDOM.tmp``.

    ``os.open`` with mode 0o666 lets the umask decide the permissions, as for any new file
    (``tempfile.mkstemp`` would leave weights readable by their owner only)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        temp = os.path.join(folder, f".{name}.{os.urandom(_TOKEN_BYTES).hex()}.tmp")
        try:
            return temp, os.open(temp, flags, 0o666)
        except FileExistsError:  # another writer drew the same name: draw again
            continue


def _fsync_folder(folder: str) -> None:
    """Persist the folder's entry for the renamed file, where the OS allows opening a folder
    (POSIX does; Windows and some virtual file systems do not, and need no such step)."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)
