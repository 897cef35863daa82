"""What a session pays for the fleet: session start and first frame through the fleet vs the single server, and the time a
session takes to resume after its node is lost (on a local Ray cluster of one-CPU nodes; a model that renders in real time on a CPU)."""

from __future__ import annotations

import asyncio
import secrets
import statistics
import time
from pathlib import Path
from typing import Any

import aiohttp

from avatarstream.benchmarks.fleet_clients import close, create, delete, listen, speech, status, wait_for
from avatarstream.benchmarks.local_server import ServerProcess


def measure_fleet(model: str, repeats: int, out_dir: Path) -> dict[str, Any]:
    from avatarstream.fleet.local_cluster import local_fleet

    token = secrets.token_hex(16)
    with ServerProcess(["--model", model, "--max-sessions", "1", "--threads", "1", "--log-level", "warning"], token, out_dir / "fleet-single.log") as server:
        single = asyncio.run(_starts(server.url, token, repeats))
    with local_fleet(nodes=2, replicas=2, token=token, model=model) as fleet:
        through_fleet = asyncio.run(_starts(fleet.url, token, repeats))
        resume = asyncio.run(_resume(fleet, token))
        ready_s = fleet.ready_s
    return {"model": model, "repeats": repeats, "single_server": single, "fleet": through_fleet, "fleet_ready_s": round(ready_s, 2), "resume": resume}


async def _starts(url: str, token: str, repeats: int) -> dict[str, float]:
    """Median over ``repeats`` sessions: the create request, and the time to first frame the session reports."""
    created, first = [], []
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {token}"}) as http:
        for _ in range(repeats + 1):  # the first session warms the path up and is not counted
            start = time.monotonic()
            code, info, _ = await create(http, url)
            assert code == 201, info
            created.append(time.monotonic() - start)
            ttff = await wait_for(lambda sid=info["id"]: _ttff(http, url, sid), 30, "the session's first frame")
            first.append(ttff)
            await delete(http, url, info["id"])
    return {"create_ms": round(1000 * statistics.median(created[1:]), 1), "ttff_s": round(statistics.median(first[1:]), 3)}


async def _ttff(http: aiohttp.ClientSession, url: str, sid: str) -> float | None:
    ttff = (await status(http, url, sid))["stats"]["ttff_s"]
    return None if ttff is None else float(ttff)


async def _resume(fleet: Any, token: str) -> dict[str, float]:
    """A speaking session's node is removed: until its client hears 1012, until it runs elsewhere, until new frames arrive."""
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {token}"}) as http:
        _, info, _ = await create(http, fleet.url)
        listener = await listen(http, fleet.url, info["id"])
        speaking = asyncio.create_task(listener.send(speech(6.0)))
        await wait_for(lambda: asyncio.sleep(0, listener.last_frame > 40), 30, "the session speaks")
        lost = time.monotonic()
        fleet.remove(info["placement"]["node"])
        await wait_for(lambda: asyncio.sleep(0, listener.close_code is not None), 30, "the client is told")
        told = time.monotonic() - lost
        await speaking
        await wait_for(lambda: _moved(http, fleet.url, info["id"]), 60, "the session runs elsewhere")
        running = time.monotonic() - lost
        again = await listen(http, fleet.url, info["id"])
        await wait_for(lambda: asyncio.sleep(0, bool(again.frames)), 30, "frames after the resume")
        frames = again.frames[0][0] - lost
        await close(again)
        await delete(http, fleet.url, info["id"])
    return {"client_told_s": round(told, 2), "running_elsewhere_s": round(running, 2), "frames_again_s": round(frames, 2)}


async def _moved(http: aiohttp.ClientSession, url: str, sid: str) -> bool:
    info = await status(http, url, sid)
    return bool(info["state"] == "running" and info["resumes"] == 1)
