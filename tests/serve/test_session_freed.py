"""An ended session is freed at once, with its encoder threads, resamplers and pipeline state: nothing waits for the cyclic GC.

On a busy server many sessions can end between two runs of Python's cyclic garbage collector; whatever a session keeps in a
reference cycle (libx264's worker threads, FFmpeg filter graphs with their thread pools, the run's latents) piles up until then.
"""

from __future__ import annotations

import asyncio
import gc
import os
import time

import httpx
import websockets
from serve_harness import TOKEN, Events, running_server, s16, speech, ws_url

AUTH = {"Authorization": f"Bearer {TOKEN}"}
NATIVE = ("AudioResampler", "VideoCodecContext", "AudioCodecContext", "Run", "Session")


def _alive() -> dict[str, int]:
    counts = dict.fromkeys(NATIVE, 0)
    for obj in gc.get_objects():
        name = type(obj).__name__
        if name in counts:
            counts[name] += 1
    return counts


def _os_threads() -> int:
    return len(os.listdir("/proc/self/task"))


def _settled_os_threads(baseline: int, timeout: float = 5.0) -> int:
    """OS threads once no more than the baseline, or as many as there are when the timeout ends (a loaded machine is slow
    to wind a thread down)."""
    deadline = time.monotonic() + timeout
    while (count := _os_threads()) > baseline and time.monotonic() < deadline:
        time.sleep(0.05)
    return count


async def _sessions(base: str, n: int) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=30, headers=AUTH) as client:
        for i in range(n):
            sid = (await client.post("/sessions", data={"identity": "default"})).json()["id"]
            async with websockets.connect(ws_url(base, sid), additional_headers=AUTH) as ws:
                events = Events(ws)
                await ws.send(s16(speech(1.0)))
                await events.wait_for(lambda e: e["type"] == "frames" and e["speech"] > 0)
                if i % 2:
                    ws.transport.abort()  # a vanished client ends its session at once
                    await asyncio.sleep(0.5)
                events.task.cancel()
            await client.delete(f"/sessions/{sid}")


def test_ended_sessions_free_their_resources_without_the_garbage_collector(tmp_path) -> None:
    gc.collect()
    with running_server(tmp_path, token=TOKEN) as base:
        asyncio.run(_sessions(base, 1))  # imports, pools and caches that live as long as the server
        gc.collect()
        threads_before, before = _os_threads(), _alive()
        gc.disable()
        try:
            asyncio.run(_sessions(base, 4))
            threads_after, after = _settled_os_threads(threads_before), _alive()
        finally:
            gc.enable()
    assert after == before, f"objects of ended sessions left for the cyclic GC: before {before}, after {after}"
    assert threads_after <= threads_before, f"OS threads {threads_before} -> {threads_after} after four sessions ended"
