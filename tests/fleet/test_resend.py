"""Speech sent again after a resume (fleet/resend.py) to a real replica server, as a fleet's slot runs it: more than its
queue bound takes, and more than one message may carry. It arrives whole, in order of the log, and the replica's queue
never holds more than its bound (the socket's backpressure paces the rest)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import aiohttp
import numpy as np
import pytest
import uvicorn

from avatarstream.benchmarks.fleet_clients import RATE, speech
from avatarstream.fleet.replica_link import ReplicaLink
from avatarstream.fleet.resend import resend
from avatarstream.fleet.speech import SpeechLog
from avatarstream.serve.api_audio_ws import message_limit
from avatarstream.serve.app import create_app
from avatarstream.serve.audio_input import MAX_MESSAGE_S
from avatarstream.serve.settings import ServeSettings

BOUND_S = 2.0  # the replica's --max-queued-audio
LOGGED_S = MAX_MESSAGE_S + 2.0  # sent again from SPOKEN_S: more than one PCM message may carry, and several times the bound
SPOKEN_S = 0.5  # what the lost replica had spoken: the saved state's position
pytestmark = pytest.mark.timeout(120)


def test_resend_paces_the_speech_into_the_replica_queue_bound(tmp_path: Path) -> None:
    async def scenario() -> None:
        settings = ServeSettings(model="demo-tiny", port=0, threads=1, max_sessions=1, max_queued_audio_s=BOUND_S, work_dir=tmp_path)
        app = create_app(settings)
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_config=None, access_log=False, ws_max_size=message_limit(settings.max_upload_bytes))
        server = uvicorn.Server(config)  # the replica's own server, as slot.py starts it
        serving = asyncio.create_task(server.serve())
        while not server.started:
            await asyncio.sleep(0.02)
        base = f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
        try:
            async with aiohttp.ClientSession() as http:
                async with http.post(f"{base}/sessions", data={"identity": "default"}) as answer:
                    sid = (await answer.json())["id"]
                live = app.state.server.manager.active[sid].live
                link = ReplicaLink(http, base, sid, None)
                await link.connect()
                refused = asyncio.create_task(first_error(link))
                log, everything = SpeechLog(), speech(LOGGED_S)
                for piece in np.array_split(everything, 100):  # as the clients' pieces were logged
                    log.add(piece)
                expected = everything.size - round(SPOKEN_S * RATE)
                sending = asyncio.create_task(resend(log, round(SPOKEN_S * RATE), link))
                peak, deadline = 0.0, time.monotonic() + 4 * LOGGED_S  # it takes about LOGGED_S - BOUND_S: the replica speaks in real time
                # the replica has it all once every sample is spoken or queued (the socket's buffers hold some before then)
                while live.speech_done + round(live.queued_s * RATE) < expected and time.monotonic() < deadline and not refused.done():
                    peak = max(peak, live.queued_s)
                    await asyncio.sleep(0.01)
                assert not refused.done(), f"the replica refused a piece: {refused.result()}"
                assert await sending == expected
                assert live.speech_done + round(live.queued_s * RATE) == expected, "every sample sent again is spoken or queued, once"
                assert peak <= BOUND_S, f"the replica's queue held {peak:.2f} s, over its bound of {BOUND_S} s"
                refused.cancel()
                await link.aclose()
                async with http.delete(f"{base}/sessions/{sid}"):
                    pass
        finally:
            server.should_exit = True
            await serving

    asyncio.run(scenario())


async def first_error(link: ReplicaLink) -> str:
    """The first error event the replica sends (it refuses a message it cannot take with one)."""
    async for message in link.events():
        if message["type"] == "error":
            return str(message["message"])
    return "the socket closed"
