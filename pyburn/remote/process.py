"""A `pyburn serve` subprocess on 127.0.0.1 and a free port, stopped at the end (the tests and
``pyburn bench remote`` serve this way: a server of its own process, as in real use)."""

from __future__ import annotations

import collections
import os
import re
import subprocess
import sys
import threading

from ..errors import RemoteError

#: how long a server may take to start listening (seconds)
START_SECONDS = 60
#: how many of the server's last lines of output `ServerProcess.log` keeps
LOG_LINES = 200


class ServerProcess:
    """``pyburn serve --device DEVICE --port 0 [args]`` in a subprocess; `address` is the
    remote device string once it listens, and `log` its output so far (the last `LOG_LINES`
    lines: a thread reads the pipe to its end, so that a talkative server never blocks on a
    full pipe). Use as a context manager."""

    def __init__(self, device: str = "cpu", *args: str, env: dict[str, str] | None = None):
        self.command = [sys.executable, "-m", "pyburn", "serve", "--device", device,
                        "--port", "0", *args]
        self.env = {**os.environ, **(env or {})}
        self.process: subprocess.Popen | None = None
        self.url = ""
        self.lines: collections.deque[str] = collections.deque(maxlen=LOG_LINES)

    @property
    def log(self) -> str:
        """The server's last lines of output (stdout and stderr), for error messages."""
        return "".join(self.lines)

    @property
    def address(self) -> str:
        """The remote device string of this server."""
        return f"remote+{self.url}"

    def __enter__(self) -> ServerProcess:
        self.process = process = subprocess.Popen(
            self.command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env=self.env)
        assert process.stdout is not None
        first: list[str] = []
        listening = threading.Event()

        def read(output=process.stdout) -> None:
            for line in output:
                if not first:
                    first.append(line)
                self.lines.append(line)
                listening.set()
            listening.set()

        # the first line says where it listens; the wait for it is bounded
        threading.Thread(target=read, daemon=True).start()
        listening.wait(START_SECONDS)
        match = re.search(r"on (wss?://[\w.]+:\d+)", first[0] if first else "")
        if match is None:
            self.stop()
            raise RemoteError(f"pyburn serve did not start within {START_SECONDS} s; its "
                              f"output:\n{self.log}")
        self.url = match.group(1)
        return self

    def stop(self) -> None:
        """Stop the server (and wait for it, boundedly)."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(30)

    def __exit__(self, *exc: object) -> None:
        self.stop()
