"""A `pyburn serve` subprocess for the tests: on 127.0.0.1, a free port, stopped at the end."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path

#: how long a server may take to start listening (seconds)
START_SECONDS = 60


class ServerProcess:
    """``pyburn serve --device DEVICE --port 0 [args]`` in a subprocess; `address` is the
    remote device string once it listens. Use as a context manager."""

    def __init__(self, device: str = "cpu", *args: str, env: dict[str, str] | None = None):
        self.command = [sys.executable, "-m", "pyburn", "serve", "--device", device,
                        "--port", "0", *args]
        self.env = {**os.environ, **(env or {})}
        self.process: subprocess.Popen | None = None
        self.url = ""

    @property
    def address(self) -> str:
        """The remote device string of this server."""
        return f"remote+{self.url}"

    def __enter__(self) -> ServerProcess:
        self.process = subprocess.Popen(self.command, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True, env=self.env,
                                        cwd=Path(__file__).parent.parent)
        found: list[str] = []
        reader = threading.Thread(target=lambda: found.append(self.process.stdout.readline()),
                                  daemon=True)
        reader.start()
        reader.join(START_SECONDS)
        match = re.search(r"on (wss?://[\w.]+:\d+)", found[0] if found else "")
        if match is None:
            self.stop()
            raise RuntimeError(f"pyburn serve did not start: {found}")
        self.url = match.group(1)
        return self

    def stop(self) -> None:
        """Stop the server (and wait for it, boundedly)."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(30)

    def __exit__(self, *exc: object) -> None:
        self.stop()
