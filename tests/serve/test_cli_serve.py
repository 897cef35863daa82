"""``avatarstream serve`` options: the token rule, and a real start that serves the page and the API."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time

import httpx
import pytest
import websockets.sync.client
from serve_harness import s16, speech

from avatarstream.benchmarks.local_server import free_port
from avatarstream.cli import serve
from avatarstream.cli.model_args import selected_model
from avatarstream.errors import InputError

# `avatarstream serve` once cli/main.py registers it; until then the same parser, run the same way
START = (
    "import argparse, sys; from avatarstream.cli.serve import add_parser; from avatarstream.cli.model_args import selected_model; "
    "p = argparse.ArgumentParser(); add_parser(p.add_subparsers(), selected_model(sys.argv[1:])); a = p.parse_args(sys.argv[1:]); sys.exit(a.run(a))"
)


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    serve.add_parser(parser.add_subparsers(), selected_model(argv))
    return parser.parse_args(["serve", *argv])


def test_a_reachable_address_needs_a_token(monkeypatch) -> None:
    monkeypatch.delenv(serve.TOKEN_ENV, raising=False)
    args = parse("--host", "0.0.0.0", "--model", "demo-tiny")
    with pytest.raises(InputError, match="--token"):
        args.run(args)
    with pytest.raises(InputError, match="at least 8"):
        args = parse("--token", "short", "--model", "demo-tiny")
        args.run(args)


def test_serve_starts_and_answers(tmp_path) -> None:
    port = free_port()
    env = {**os.environ, serve.TOKEN_ENV: "cli-test-token-123"}
    command = [sys.executable, "-c", START, "serve", "--port", str(port), "--model", "demo-tiny", "--threads", "1", "--work-dir", str(tmp_path)]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                health = httpx.get(base + "/healthz")
                break
            except httpx.ConnectError:
                assert process.poll() is None and time.monotonic() < deadline, process.stderr.read() if process.poll() is not None else "slow start"
                time.sleep(0.2)
        assert health.json() == {"status": "ok", "model": "demo-tiny", "sessions": 0, "max_sessions": 4, "auth_required": True}
        assert "avatarstream" in httpx.get(base + "/").text
        assert httpx.get(base + "/openapi.json").json()["paths"]["/sessions"]["post"]
        headers = {"Authorization": "Bearer cli-test-token-123"}
        created = httpx.post(base + "/sessions", headers=headers, data={"identity": "default"})
        assert created.status_code == 201
        url = f"ws://127.0.0.1:{port}/sessions/{created.json()['id']}/audio?format=s16le&rate=16000&token=cli-test-token-123"
        with websockets.sync.client.connect(url) as ws:
            ws.send(s16(speech(0.5)))
            assert json.loads(ws.recv(timeout=30))["type"] == "frames"
    finally:
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    events = [line for line in stderr.splitlines() if line.startswith("{")]
    assert any('"event": "session opened"' in line for line in events), stderr
    assert created.json()["id"] not in stderr and "cli-test-token-123" not in stderr, "a session id or the token reached the logs"
