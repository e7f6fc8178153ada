"""The remote device client's WebSocket: the `websockets` library's on the desktop
(`SocketConnection`), the page's own under Pyodide (`PageConnection`). Both send frames at
once and await each request's answer, so the client's reads are awaitable at heart; the
desktop's answers come without suspending, so its synchronous reads need no event loop.

Answers come in the order of the requests. A request whose answer is late past its timeout
closes the connection: a later answer would otherwise be taken for the next request's.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections import deque
from typing import Any, Protocol

from ..errors import MissingExtraError, RemoteError


class Connection(Protocol):
    """What the client needs of a WebSocket."""

    def send(self, frame: bytes, answered: bool = False) -> None:
        """Send one binary frame: a message with no answer, or (`answered`) one whose answer
        nobody awaits but `settle` (the client's flow control)."""

    async def request(self, frame: bytes, timeout: float) -> bytes:
        """Send `frame` and return the frame that answers it."""

    async def settle(self, ahead: int, timeout: float) -> None:
        """Wait until at most `ahead` of the answers nobody awaits are still to come."""

    def close(self) -> None:
        """Close the connection (the server then frees the session)."""


def _lost(url: str, exc: BaseException) -> RemoteError:
    return RemoteError(f"the connection to {url} is lost: {exc}")


class SocketConnection:
    """A connection through ``websockets.sync`` (``pip install 'pyburn[remote]'``). A
    ``wss://`` server's certificate is checked against ``$PYBURN_REMOTE_CA`` where set, else
    the system's authorities."""

    def __init__(self, url: str, timeout: float):
        try:
            from websockets.sync.client import connect  # optional: pyburn[remote]
        except ImportError:
            raise MissingExtraError("the remote device needs websockets: pip install "
                                    "'pyburn[remote]'") from None
        tls = None
        if url.startswith("wss://"):
            import ssl  # only for wss:// (Pyodide, which has no websockets, lacks it)

            tls = ssl.create_default_context(cafile=os.environ.get("PYBURN_REMOTE_CA"))
        self.url = url
        self._lock = threading.RLock()  # one request at a time: its answer is the next frame
        self._unclaimed = 0  # answers to come that nobody awaits
        self._open = contextlib.ExitStack()  # the connection, closed by `close`
        try:
            self._socket = self._open.enter_context(connect(
                url, open_timeout=timeout, close_timeout=5, max_size=None, compression=None,
                ssl=tls))
        except Exception as exc:
            raise RemoteError(f"cannot reach {url}: {exc}") from None

    def send(self, frame: bytes, answered: bool = False) -> None:
        """Send one frame."""
        with self._lock:
            try:
                self._socket.send(frame)
            except Exception as exc:
                raise _lost(self.url, exc) from None
            self._unclaimed += answered

    async def request(self, frame: bytes, timeout: float) -> bytes:
        """Send `frame` and wait (blocking: this never suspends) for its answer."""
        with self._lock:
            self.send(frame)
            while self._unclaimed:
                self._receive(timeout)
                self._unclaimed -= 1
            return self._receive(timeout)

    async def settle(self, ahead: int, timeout: float) -> None:
        """Wait (blocking) until at most `ahead` unclaimed answers are to come."""
        with self._lock:
            while self._unclaimed > ahead:
                self._receive(timeout)
                self._unclaimed -= 1

    def _receive(self, timeout: float) -> bytes:
        try:
            answer = self._socket.recv(timeout=timeout)
        except TimeoutError:
            self.close()
            raise RemoteError(f"{self.url} did not answer within {timeout:.0f} s; the "
                              "connection is closed") from None
        except Exception as exc:
            raise _lost(self.url, exc) from None
        if not isinstance(answer, bytes):
            raise RemoteError(f"{self.url} answered with a text frame")
        return answer

    def close(self) -> None:
        """Close the connection."""
        self._open.close()


class PageConnection:
    """A connection through the browser's WebSocket, from Python under Pyodide: frames are
    sent at once and answers awaited (a read never blocks the page)."""

    def __init__(self, url: str):
        import js  # type: ignore[import-not-found]  # optional: Pyodide only
        from pyodide.ffi import create_proxy  # type: ignore[import-not-found]  # Pyodide only

        self.url = url
        self._loop = asyncio.get_event_loop()
        self._opened = self._loop.create_future()
        self._waiting: deque[Any] = deque()  # the futures of requests not yet answered
        self._unclaimed: deque[Any] = deque()  # those of them that nobody awaits
        self._gone: RemoteError | None = None
        self._socket = js.WebSocket.new(url)
        self._socket.binaryType = "arraybuffer"
        self._handlers = [create_proxy(f) for f in (self._on_open, self._on_message,
                                                   self._on_close)]
        self._socket.onopen, self._socket.onmessage, self._socket.onclose = self._handlers

    @classmethod
    async def open(cls, url: str, timeout: float) -> PageConnection:
        """The connection to `url`, once open."""
        connection = cls(url)
        try:
            await asyncio.wait_for(asyncio.shield(connection._opened), timeout)
        except TimeoutError:
            connection.close()
            raise RemoteError(f"cannot reach {url} within {timeout:.0f} s") from None
        return connection

    def _on_open(self, event: Any) -> None:
        if not self._opened.done():
            self._opened.set_result(None)

    def _on_message(self, event: Any) -> None:
        import js  # type: ignore[import-not-found]  # optional: Pyodide only

        frame = js.Uint8Array.new(event.data).to_bytes()
        if self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(frame)

    def _on_close(self, event: Any) -> None:
        self._gone = RemoteError(f"the connection to {self.url} is closed (code "
                                 f"{event.code}{': ' + event.reason if event.reason else ''})")
        if not self._opened.done():
            self._opened.set_exception(RemoteError(f"cannot reach {self.url}"))
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_exception(self._gone)
        for handler in self._handlers:
            handler.destroy()
        self._handlers = []

    def send(self, frame: bytes, answered: bool = False) -> None:
        """Send one frame."""
        waiter = self._send(frame, answered)
        if waiter is not None:
            self._unclaimed.append(waiter)

    def _send(self, frame: bytes, answered: bool) -> Any:
        """Send `frame`; the future of its answer where it has one."""
        from pyodide.ffi import to_js  # type: ignore[import-not-found]  # Pyodide only

        if self._gone is not None:
            raise self._gone
        self._socket.send(to_js(frame))
        if answered:
            waiter = self._loop.create_future()
            self._waiting.append(waiter)
            return waiter
        return None

    async def request(self, frame: bytes, timeout: float) -> bytes:
        """Send `frame` and await its answer."""
        return await self._answer(self._send(frame, True), timeout)

    async def settle(self, ahead: int, timeout: float) -> None:
        """Await the unclaimed answers until at most `ahead` are to come."""
        while len(self._unclaimed) > ahead:
            await self._answer(self._unclaimed.popleft(), timeout)

    async def _answer(self, waiter: Any, timeout: float) -> bytes:
        try:
            return await asyncio.wait_for(waiter, timeout)
        except TimeoutError:
            self.close()
            raise RemoteError(f"{self.url} did not answer within {timeout:.0f} s; the "
                              "connection is closed") from None

    def close(self) -> None:
        """Close the connection."""
        self._socket.close()
