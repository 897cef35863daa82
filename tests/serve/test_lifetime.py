"""Sessions end when their client is gone: an abrupt disconnect frees at once, silence ends at the idle timeout,
and closing returns the server's memory and threads to their baseline."""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from collections import Counter

import httpx
import psutil
import websockets
from serve_harness import Events, running_server, s16, speech, ws_url

IDLE_TIMEOUT_S = 2.0


def test_dropped_client_frees_its_session_and_idle_sessions_time_out(tmp_path) -> None:
    with running_server(tmp_path, idle_timeout_s=IDLE_TIMEOUT_S) as base:
        asyncio.run(_dropped_and_idle(base))


async def _state(client: httpx.AsyncClient, sid: str, want: str, timeout: float) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if (await client.get(f"/sessions/{sid}")).json()["state"] == want:
            return time.monotonic() - start
        await asyncio.sleep(0.05)
    raise AssertionError(f"session not {want} within {timeout} s")


async def _dropped_and_idle(base: str) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        dropped = (await client.post("/sessions", data={"identity": "default"})).json()["id"]
        ws = await websockets.connect(ws_url(base, dropped))
        events = Events(ws)
        await ws.send(s16(speech(5.0)))
        await events.wait_for(lambda e: e["type"] == "frames" and e["speech"] > 0)
        ws.transport.abort()  # no close handshake: the client crashed
        freed_after = await _state(client, dropped, "closed", timeout=10.0)
        print(f"\nabrupt disconnect freed its session in {freed_after:.2f} s")
        assert (await client.get("/healthz")).json()["sessions"] == 0

        kept = (await client.post("/sessions", data={"identity": "default"})).json()["id"]
        async with websockets.connect(ws_url(base, kept)) as ws:
            await ws.send(s16(speech(0.5)))
        # a clean close keeps the session, until nobody touches it for the idle timeout
        for _ in range(4):  # touched every half timeout for twice the timeout: any request to it counts as activity
            assert (await client.get(f"/sessions/{kept}")).json()["state"] == "running"
            last_touch = time.monotonic()
            await asyncio.sleep(IDLE_TIMEOUT_S / 2)
        while (await client.get("/healthz")).json()["sessions"] > 0:  # untouched (healthz touches no session): it ends
            assert time.monotonic() - last_touch < 15, "an untouched session outlived the idle timeout"
            await asyncio.sleep(0.1)
        assert time.monotonic() - last_touch >= IDLE_TIMEOUT_S - 0.25  # ended by the timeout, not at once
        assert (await client.get(f"/sessions/{kept}")).json()["state"] == "closed"


def test_closing_sessions_returns_memory_and_threads_to_baseline(tmp_path) -> None:
    with running_server(tmp_path) as base:
        asyncio.run(_cycles(base))


async def _one_cycle(client: httpx.AsyncClient, base: str) -> None:
    sid = (await client.post("/sessions", data={"identity": "default", "outputs": '{"hls": true}'})).json()["id"]
    async with websockets.connect(ws_url(base, sid)) as ws:
        events = Events(ws)
        await ws.send(s16(speech(1.5)))
        await events.wait_for(lambda e: e["type"] == "frames" and e["first_frame"] >= 30)
        events.task.cancel()
    assert (await client.delete(f"/sessions/{sid}")).json()["state"] == "closed"


# Worker pools shared by all sessions start their threads lazily and keep them: they may grow up to their bound
# when requests overlap, which is not a session leaking. Every other thread (encoder, sinks, pipeline loop) is a
# session's own and must be gone once the session is closed.
SHARED_POOLS = ("serve_", "AnyIO worker thread", "asyncio_", "ThreadPoolExecutor-")


def _session_threads() -> Counter[str]:
    return Counter(t.name for t in threading.enumerate() if not t.name.startswith(SHARED_POOLS))


async def _settled_session_threads(baseline: Counter[str], timeout: float = 5.0) -> Counter[str]:
    """The session threads once they match the baseline, or as they are when the timeout ends."""
    deadline = time.monotonic() + timeout
    while (current := _session_threads()) != baseline and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return current


async def _cycles(base: str) -> None:
    process = psutil.Process()
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        await _one_cycle(client, base)  # first use: lazy imports, allocator pools
        gc.collect()
        threads, baseline = _session_threads(), process.memory_info().rss
        for _ in range(4):
            await _one_cycle(client, base)
        gc.collect()
        await asyncio.sleep(0.2)
        after = process.memory_info().rss
        print(f"\nRSS after 1 cycle {baseline / 2**20:.0f} MiB, after 5 cycles {after / 2**20:.0f} MiB ({after / baseline:.3f}x)")
        left = await _settled_session_threads(threads)
        assert left == threads, f"closed sessions left threads behind: {sorted((left - threads).elements())}"
        assert after / baseline < 1.10
        assert (await client.get("/healthz")).json()["sessions"] == 0
