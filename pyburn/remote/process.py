"""A `pyburn serve` subprocess on 127.0.0.1 and a free port, stopped at the end (the tests and
``pyburn bench remote`` serve this way: a server of its own process, as in real use)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading

from ..errors import RemoteError

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
        self.process = process = subprocess.Popen(
            self.command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env=self.env)
        assert process.stdout is not None
        output = process.stdout
        found: list[str] = []
        # the first line says where it listens; read on a thread so that the wait is bounded
        reader = threading.Thread(target=lambda: found.append(output.readline()), daemon=True)
        reader.start()
        reader.join(START_SECONDS)
        match = re.search(r"on (wss?://[\w.]+:\d+)", found[0] if found else "")
        if match is None:
            self.stop()
            raise RemoteError(f"pyburn serve did not start within {START_SECONDS} s: {found}")
        self.url = match.group(1)
        return self

    def stop(self) -> None:
        """Stop the server (and wait for it, boundedly)."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(30)

    def __exit__(self, *exc: object) -> None:
        self.stop()
