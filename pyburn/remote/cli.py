"""The ``pyburn serve`` command: a local device served to `remote+ws://` clients."""

from __future__ import annotations

import argparse
import os
import re
import ssl
import sys
from pathlib import Path
from typing import Any

from ..devices import device as as_device
from ..errors import ArgumentError
from .server import Limits

_EPILOG = """examples:
  pyburn serve --device cpu                   serve numpy on ws://127.0.0.1:3000
  pyburn serve --device wgpu --port 3001      serve the GPU
  pyburn serve --host 0.0.0.0 --token-file T  serve the network; clients set
                                              PYBURN_REMOTE_TOKEN to T's contents
client side: pyburn.device("remote+ws://127.0.0.1:3000") (docs/remote.md)"""


_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}


def byte_count(text: str) -> int:
    """A size such as ``4GiB``, ``512MB`` or ``1048576`` in bytes."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    unit = match.group(2).lower() if match else ""
    if match is None or unit not in _UNITS:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size: write it as 4GiB, 512MB or a "
                                         "count of bytes")
    return int(float(match.group(1)) * _UNITS[unit])


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``serve`` subcommand to `subparsers`."""
    parser = subparsers.add_parser(
        "serve", help="serve a device of this machine to remote+ws:// clients",
        description="Serve a local device over WebSocket: each client connection is a "
        "session whose tensors live here until it reads them, and are freed when it closes.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default=None,
                        help="the device to serve: cpu, wgpu, flex, ... (default: the default "
                        "device)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="the address to listen on (default 127.0.0.1, this machine only; "
                        "any other needs --token-file)")
    parser.add_argument("--port", type=int, default=3000,
                        help="the port (default 3000; 0 picks a free one, printed)")
    parser.add_argument("--token-file", type=Path, metavar="FILE",
                        help="a file holding the token clients must present")
    parser.add_argument("--max-sessions", type=int, default=64, metavar="N",
                        help="the most sessions open at once (default 64)")
    parser.add_argument("--max-memory", type=byte_count, default=Limits().memory_bytes,
                        metavar="SIZE", help="the most tensor memory one session holds, "
                        "e.g. 512MiB or 8GB (default 4GiB)")
    parser.add_argument("--origin", action="append", default=[], metavar="URL",
                        help="a web page origin whose scripts may connect, e.g. "
                        "http://127.0.0.1:8000 (repeatable; by default browsers are refused, "
                        "so that a site you visit cannot use this server)")
    parser.add_argument("--cpu-threads", type=int, metavar="N",
                        help="the threads numpy's BLAS runs a cpu device's products on "
                        "(default: its own choice, about one per core); 1 leaves the other "
                        "cores to clients on the same machine")
    parser.add_argument("--tls-cert", type=Path, metavar="CERT",
                        help="serve wss:// with this certificate chain (PEM)")
    parser.add_argument("--tls-key", type=Path, metavar="KEY", help="its private key (PEM)")
    parser.set_defaults(run=_serve)
    return parser


def _serve(args: argparse.Namespace) -> int:
    from .server import Server, check_binding  # websockets loads only to serve

    token = args.token_file.read_text().strip() if args.token_file else None
    if args.token_file and not token:
        raise ArgumentError(f"the token file {args.token_file} is empty")
    check_binding(args.host, token)
    tls = None
    if args.tls_cert or args.tls_key:
        if not (args.tls_cert and args.tls_key):
            raise ArgumentError("TLS needs both --tls-cert and --tls-key")
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(args.tls_cert, args.tls_key)
    if args.cpu_threads is not None:
        if args.cpu_threads < 1:
            raise ArgumentError(f"--cpu-threads takes a count of 1 or more, not "
                                f"{args.cpu_threads}")
        # read by the BLAS libraries when numpy loads, which serving the device does next
        for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[name] = str(args.cpu_threads)
    served = as_device(args.device)
    server = Server(served, token=token, max_sessions=args.max_sessions,
                    limits=Limits(memory_bytes=args.max_memory), origins=tuple(args.origin))
    scheme = "wss" if tls else "ws"

    def ready(port: int) -> None:
        print(f"pyburn serve: {served.name} on {scheme}://{args.host}:{port} "
              "(Ctrl-C stops)", flush=True)

    try:
        server.serve(args.host, args.port, ready, tls=tls)
    except KeyboardInterrupt:
        print("pyburn serve: stopped", file=sys.stderr)
    return 0
