"""The remote device: `pyburn serve` (`server`) makes a device of one process usable from
another, as ``pyburn.device("remote+ws://host:3000")`` (the client backend is
``pyburn.backends.remote``). `protocol` holds the messages and the task table, `wire` the
MessagePack codec both sides share; docs/remote.md describes both."""
