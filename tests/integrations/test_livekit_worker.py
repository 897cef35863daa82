"""`avatarstream livekit-worker`: its command line, and its /launch route answering agents (no LiveKit server runs here)."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
from aiohttp import web

from avatarstream.cli.main import main
from avatarstream.integrations.livekit_worker import AvatarWorker


def test_the_command_needs_livekit_credentials(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("LIVEKIT_URL", "LIVEKIT_API_KEY", "LIVEKIT_API_SECRET"):
        monkeypatch.delenv(name, raising=False)
    assert main(["livekit-worker", "--livekit-url", "wss://example.invalid"]) == 2
    assert "error: the worker joins rooms with its own tokens: give --api-key (or $LIVEKIT_API_KEY), --api-secret" in capsys.readouterr().err


async def launches(worker: AvatarWorker, bodies: list[object]) -> list[tuple[int, dict]]:
    runner = web.AppRunner(worker.app())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    answers = []
    try:
        async with aiohttp.ClientSession() as http:
            for body in bodies:
                async with http.post(f"http://127.0.0.1:{port}/launch", json=body) as answer:
                    answers.append((answer.status, await answer.json()))
    finally:
        await runner.cleanup()
    return answers


def test_launch_answers_the_agent() -> None:
    made = []
    worker = AvatarWorker("ws://127.0.0.1:9", "key", "a-secret-long-enough-for-hs256-signing", lambda: made.append(1))  # type: ignore[arg-type,return-value]
    good = {"room": "r1", "agent_identity": "agent", "avatar_identity": "avatar"}
    (bad, bad_body), (unreachable, why) = asyncio.run(launches(worker, [{"room": "r1"}, good]))
    assert bad == 422 and "agent_identity" in bad_body["detail"]
    assert unreachable == 502 and why["detail"].startswith("cannot join room r1:")
    assert made == [] and worker.rooms == {}  # nothing is loaded for a room it could not join


def test_the_worker_token_publishes_for_the_agent() -> None:
    from livekit import api

    worker = AvatarWorker("wss://example.invalid", "key", "a-secret-long-enough-for-hs256-signing", lambda: None)  # type: ignore[arg-type,return-value]
    claims = api.TokenVerifier("key", "a-secret-long-enough-for-hs256-signing").verify(worker.token("r1", "agent-7", "avatar"))
    assert claims.identity == "avatar" and claims.video.room == "r1" and claims.video.room_join
    assert claims.attributes == {"lk.publish_on_behalf": "agent-7"}
