"""The ``pyburn serve`` command: a local device served to `remote+ws://` clients."""

from __future__ import annotations

import argparse
import asyncio
import ssl
import sys
from pathlib import Path
from typing import Any

from ..devices import device as as_device
from ..errors import ArgumentError

_EPILOG = """examples:
  pyburn serve --device cpu                   serve numpy on ws://127.0.0.1:3000
  pyburn serve --device wgpu --port 3001      serve the GPU
  pyburn serve --host 0.0.0.0 --token-file T  serve the network; clients set
                                              PYBURN_REMOTE_TOKEN to T's contents
client side: pyburn.device("remote+ws://127.0.0.1:3000") (docs/remote.md)"""


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
    parser.add_argument("--tls-cert", type=Path, metavar="CERT",
                        help="serve wss:// with this certificate chain (PEM)")
    parser.add_argument("--tls-key", type=Path, metavar="KEY", help="its private key (PEM)")
    parser.set_defaults(run=_serve)
    return parser


def _serve(args: argparse.Namespace) -> int:
    from .server import Server, check_binding  # import time: websockets loads only to serve

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
    served = as_device(args.device)
    server = Server(served, token=token, max_sessions=args.max_sessions)
    scheme = "wss" if tls else "ws"

    def ready(port: int) -> None:
        print(f"pyburn serve: {served.name} on {scheme}://{args.host}:{port} "
              "(Ctrl-C stops)", flush=True)

    try:
        asyncio.run(server.serve(args.host, args.port, ready, tls=tls))
    except KeyboardInterrupt:
        print("pyburn serve: stopped", file=sys.stderr)
    return 0
