"""`pyburn web serve`'s server: MIME types pages need, precompressed copies to browsers that
accept them, cross-origin isolation where asked, nothing outside the folder, 127.0.0.1."""

from __future__ import annotations

import gzip
import urllib.error
import urllib.request
from email.message import Message

import pytest

from pyburn.cli import main
from pyburn.web.serve import ISOLATION, make_server, serving

WASM = b"\0asm" + bytes(range(256)) * 8
GZ = gzip.compress(WASM, mtime=0)


@pytest.fixture
def folder(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<!doctype html>")
    (site / "kernel.wasm").write_bytes(WASM)
    (site / "kernel.wasm.gz").write_bytes(GZ)
    (site / "kernel.wasm.br").write_bytes(b"brotli stand-in")
    (site / "page.mjs").write_text("export {};")
    (tmp_path / "secret.txt").write_text("outside")
    return site


def fetch(url: str, encoding: str | None = None) -> tuple[Message, bytes]:
    """The headers (names in any case) and body of a GET of `url`."""
    request = urllib.request.Request(url, headers={"Accept-Encoding": encoding} if encoding
                                     else {})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.headers, response.read()


@pytest.mark.parametrize("accept,encoding,body", [
    (None, None, WASM),
    ("gzip", "gzip", GZ),
    ("gzip, deflate, br, zstd", "br", b"brotli stand-in"),
    ("br;q=1.0, gzip;q=0.8", "br", b"brotli stand-in"),
])
def test_precompressed_copies_go_to_browsers_that_accept_them(folder, accept, encoding, body):
    with serving({"/": folder}) as base:
        headers, data = fetch(base + "kernel.wasm", accept)
    assert headers["Content-Type"] == "application/wasm"
    assert headers.get("Content-Encoding") == encoding
    assert data == body


def test_module_scripts_are_javascript_and_isolation_is_sent_when_asked(folder):
    with serving({"/": folder}) as base:
        plain, _ = fetch(base + "page.mjs")
    with serving({"/": folder}, isolated=True) as base:
        isolated, _ = fetch(base + "page.mjs")
    assert plain["Content-Type"] == isolated["Content-Type"] == "text/javascript"
    assert all(plain.get(name) is None for name in ISOLATION)
    assert {name: isolated[name] for name in ISOLATION} == ISOLATION


def test_nothing_outside_the_folder_is_served(folder):
    with serving({"/": folder}) as base:
        with pytest.raises(urllib.error.HTTPError) as refused:
            fetch(base + "../secret.txt")
        with pytest.raises(urllib.error.HTTPError):
            fetch(base + "%2e%2e/secret.txt")
    assert refused.value.code == 404


def test_the_server_binds_to_localhost_by_default(folder):
    server = make_server({"/": folder})
    try:
        assert server.server_address[0] == "127.0.0.1"
    finally:
        server.server_close()


def test_serving_a_folder_that_is_not_a_build_is_refused(tmp_path, capsys):
    assert main(["web", "serve", str(tmp_path)]) == 1
    assert "holds no index.html: build it first" in capsys.readouterr().err
