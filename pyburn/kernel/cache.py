"""Where pyburn.kernel keeps what outlives a process: generated shaders and autotune's picks,
in ``$PYBURN_DATA`` (``~/.cache/pyburn``, where datasets go too). In a browser, where the page
gives one (``pyburn/web/runtime/session.js`` mounts a folder that IndexedDB keeps between
visits and names it in ``$PYBURN_DATA``); else nothing is kept (memory only)."""

from __future__ import annotations

import os
from pathlib import Path

from ..runtime import IN_BROWSER


def folder() -> Path | None:
    """The folder of the kept files (None in a browser whose page gives none)."""
    if IN_BROWSER:
        given = os.environ.get("PYBURN_DATA")
        return Path(given) if given else None
    from ..data.datasets import data_root  # import time: pyburn.data loads on first use

    return data_root()


def write_whole(path: Path, text: str) -> None:
    """Write `path` so that another process reads the old file or the new one, never a
    part; where nothing can be written, the cache is only memory."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(text)
        temporary.replace(path)
    except OSError:
        pass
