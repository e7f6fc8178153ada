"""What a first visit of each page of a built folder transfers, measured in Chromium: the
folder served as `pyburn web serve` serves it (precompressed copies included), each page
opened in a fresh context (an empty cache) until it is ready (``body[data-ready]``; a page
with no script, once the network is idle), and the bytes of every response body as it came
over the wire summed. Prints a Markdown table, one row per page.

    .venv/bin/python scripts/page_sizes.py site/dist build/points-site
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pyburn.bench.web import chromium
from pyburn.web.serve import serving

#: how long a page may take to be ready (body[data-ready]), in milliseconds
READY_MS = 180_000


def first_visit(browser: object, url: str, scripted: bool,
                accept: str | None) -> tuple[int, int]:
    """The requests and the bytes on the wire (response bodies) of opening `url` afresh;
    a `scripted` page is waited for until it says it is ready. `accept`: the encodings the
    browser says it takes (None: its own list, brotli included)."""
    headers = {"Accept-Encoding": accept} if accept else {}
    context = browser.new_context(extra_http_headers=headers)  # type: ignore[attr-defined]
    responses: list[object] = []
    try:
        context.on("response", lambda response: responses.append(response))  # workers' too
        page = context.new_page()
        page.goto(url)
        if scripted:
            page.wait_for_selector("body[data-ready]", state="attached", timeout=READY_MS)
        page.wait_for_load_state("networkidle")
        sizes = [r.request.sizes()["responseBodySize"] for r in responses]  # type: ignore[attr-defined]
        return len(sizes), sum(sizes)
    finally:
        context.close()


def main() -> int:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", type=Path, nargs="+", help="built folders")
    parser.add_argument("--accept", metavar="ENCODINGS",
                        help='the Accept-Encoding the browser sends, e.g. "gzip" for a host '
                        "without brotli (default: Chromium's own)")
    args = parser.parse_args()
    reason = chromium.unavailable_reason()
    if reason:
        sys.exit(reason)
    from playwright.sync_api import sync_playwright  # optional: playwright (the dev extra)

    print("| page | requests | transferred |\n|---|---|---|")
    with sync_playwright() as driver:
        browser = chromium.launch(driver, webgpu=False)
        try:
            for folder in args.folders:
                with serving({"/": folder}) as base:
                    for page in sorted(folder.glob("*.html")):
                        scripted = "<script" in page.read_text()
                        count, size = first_visit(browser, base + page.name, scripted,
                                                   args.accept)
                        print(f"| {folder.name}/{page.name} | {count} | {size / 1e6:.2f} MB |",
                              flush=True)
        finally:
            browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
