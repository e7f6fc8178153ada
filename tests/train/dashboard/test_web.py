"""`pyburn dash --web`'s server (`pyburn.train.dashboard.web`) over HTTP: the page and its
files, the runs' names, each run's events from a byte offset on (a line still being written
waits; a log cut back starts again), NaN as null, bad requests refused; it listens on
127.0.0.1, and the command prints its address and serves until stopped."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from pyburn.train.dashboard.web import make_server, serving

#: the bound on every wait
WAIT_S = 30


def get(url: str) -> tuple[int, str, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=WAIT_S) as answer:
            return answer.status, answer.headers["Content-Type"], answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read()


def line(**event) -> bytes:
    return (json.dumps(event) + "\n").encode()


@pytest.fixture
def run(tmp_path) -> Path:
    folder = tmp_path / "a"
    folder.mkdir()
    return folder


def test_the_page_the_runs_and_their_events_from_an_offset(run, tmp_path):
    log = run / "events.jsonl"
    with serving([("a", run), ("b", tmp_path)]) as url:
        status, kind, body = get(url)
        assert status == 200 and kind.startswith("text/html") and b"dash.js" in body
        for name, wanted in (("dash.js", "text/javascript"), ("dash.css", "text/css")):
            assert get(url + name)[1].startswith(wanted)
        assert json.loads(get(url + "runs")[2]) == {"runs": ["a", "b"]}
        assert json.loads(get(url + "events?run=0&from=0")[2]) == {
            "events": [], "next": 0, "again": False}  # nothing written yet
        first = line(event="status", state="started", step=0)
        second = line(event="metrics", split="train", step=5, metrics={"loss": float("nan")})
        log.write_bytes(first + second[:10])  # the second line still being written
        answer = json.loads(get(url + "events?run=0&from=0")[2])
        assert [e["state"] for e in answer["events"]] == ["started"]
        assert answer["next"] == len(first)
        log.write_bytes(first + second)
        answer = json.loads(get(url + f"events?run=0&from={len(first)}")[2])
        assert answer["events"][0]["metrics"] == {"loss": None}  # JSON has no NaN
        log.write_bytes(first)  # cut back, as a resume does
        answer = json.loads(get(url + f"events?run=0&from={len(first + second)}")[2])
        assert answer["again"] and answer["next"] == len(first)
        for bad in ("events?run=9", "events?run=x", "events"):
            assert get(url + bad)[0] == 400
        assert get(url + "../../etc/passwd")[0] == 404


def test_it_listens_on_this_machine_only_by_default(run):
    server = make_server([("a", run)])
    try:
        assert server.server_address[0] == "127.0.0.1"
    finally:
        server.server_close()


def test_the_command_prints_its_address_and_serves_until_stopped(run):
    process = subprocess.Popen([sys.executable, "-m", "pyburn", "dash", "--web", "--port", "0",
                                str(run)], stdout=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"})
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: lines.put(process.stdout.readline()), daemon=True).start()
    try:
        printed = lines.get(timeout=WAIT_S)
        assert printed.startswith("pyburn dash: http://127.0.0.1:")
        url = printed.split()[2]
        assert json.loads(get(url + "runs")[2]) == {"runs": ["a"]}
    finally:
        process.terminate()
        process.wait(WAIT_S)
