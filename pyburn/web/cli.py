"""The ``pyburn web`` commands: ``build`` an app into a static folder, ``serve`` one."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..errors import ArgumentError

_EPILOG = """examples:
  pyburn web build examples/web/points -o dist/   the folder's app.py and its ONNX model
  pyburn web build digits.py --asset model.onnx -o dist/
  pyburn web serve dist/                          http://127.0.0.1:8000/, precompressed
then, from the page: const py = await loadPyburn(); await py.call("predict", pixels)
(docs/deploy.md)"""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``web`` subcommand (``build``, ``serve``) to `subparsers`."""
    parser = subparsers.add_parser(
        "web", help="ship an app as a static site: build it, serve it",
        description="Put a Python app that uses pyburn on a static web host: the page runs "
        "it in the browser (Pyodide), on WebGPU where there is one, else on WebAssembly.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="web_command", title="commands", metavar="COMMAND",
                                     required=True)

    build = commands.add_parser(
        "build", help="build an app into a static folder that works offline",
        description="Build APP (a Python module, or a folder with app.py or main.py) into a "
        "static folder: the page, the loader, Pyodide, the pyburn wheel (trimmed and "
        "byte-compiled), the app's code and assets, each file precompressed. The folder is "
        "written whole or not at all.", epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    build.add_argument("app", type=Path, metavar="APP", help="the app: a .py file or a folder")
    build.add_argument("-o", "--out", type=Path, required=True, metavar="DIR",
                       help="the folder to write (an earlier build there is replaced)")
    build.add_argument("--entry", metavar="MODULE",
                       help="the module the page imports, for a folder app (default: app.py, "
                       "else main.py)")
    build.add_argument("--asset", type=Path, action="append", default=[], metavar="FILE",
                       help="a file inside the app's folder for its Python (repeatable; a "
                       "module app also ships what its ASSETS list names)")
    build.add_argument("--pyodide", type=Path, metavar="DIR",
                       help="a Pyodide distribution folder (default: npm's package, fetched "
                       "with npm into ~/.cache/pyburn/web once)")
    build.add_argument("--package", action="append", default=[], metavar="NAME",
                       help="a Pyodide package the page loads at start, e.g. numpy (from a "
                       "full Pyodide release) or micropip (repeatable)")
    build.add_argument("--exclude", action="append", default=[], metavar="PATH",
                       help="more of pyburn to leave out of the wheel, e.g. pyburn/train")
    build.add_argument("--include", action="append", default=[], metavar="PATH",
                       help="a part the wheel leaves out by default to keep, e.g. pyburn/bench")
    build.add_argument("--sources", action="store_true",
                       help="ship pyburn's sources beside its .pyc files (tracebacks show "
                       "source lines; the wheel grows by about a third)")
    build.add_argument("--isolated", action="store_true",
                       help="the page needs cross-origin isolation (SharedArrayBuffer); "
                       "pyburn web serve then sends COOP/COEP")
    build.add_argument("--brotli-quality", type=int, default=11, choices=range(1, 12),
                       metavar="1-11", help="brotli's quality for the .br files (default 11)")
    build.set_defaults(run=_build)

    serve = commands.add_parser(
        "serve", help="serve a built folder on this machine",
        description="Serve DIR as a static site with the MIME types pages need, its "
        "precompressed .br/.gz copies, and cross-origin isolation headers where the build "
        "asks for them.", epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    serve.add_argument("dir", type=Path, metavar="DIR", help="the folder (pyburn web build's)")
    serve.add_argument("--host", default="127.0.0.1",
                       help="the address to listen on (default 127.0.0.1, this machine only)")
    serve.add_argument("--port", type=int, default=8000,
                       help="the port (default 8000; 0 picks a free one, printed)")
    serve.add_argument("--isolated", action="store_true",
                       help="send the cross-origin isolation headers even if the build does "
                       "not ask for them")
    serve.set_defaults(run=_serve)
    return parser


def _build(args: argparse.Namespace) -> int:
    from . import app as apps  # import time: the build tool loads only to build
    from .build import Options, build  # (as above)

    found = apps.resolve(args.app, args.asset, args.entry, skip=[args.out])
    options = Options(pyodide=args.pyodide, packages=tuple(args.package),
                      exclude=tuple(args.exclude), include=tuple(args.include),
                      sources=args.sources, isolated=args.isolated,
                      brotli_quality=args.brotli_quality)
    print(f"building {found.name}: {len(found.python_files)} files for Python, "
          f"{len(found.page_files)} for the page; exports {', '.join(found.exports) or 'none'}",
          file=sys.stderr)
    report = build(found, args.out, options)
    for note in report.notes:
        print(f"note: {note}", file=sys.stderr)
    print(report.table())
    print(f"built {report.out}: serve it with `pyburn web serve {args.out}`")
    return 0


def _serve(args: argparse.Namespace) -> int:
    from .serve import make_server, wants_isolation  # http.server loads only to serve

    if not (args.dir / "index.html").is_file():
        raise ArgumentError(f"{args.dir} holds no index.html: build it first with "
                            "`pyburn web build APP -o DIR`")
    isolated = args.isolated or wants_isolation(args.dir)
    server = make_server({"/": args.dir.resolve()}, args.host, args.port, isolated,
                         quiet=False)
    host, port = str(server.server_address[0]), server.server_address[1]
    print(f"serving {args.dir} on http://{host}:{port}/"
          f"{' (cross-origin isolated)' if isolated else ''}; Ctrl-C stops", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
