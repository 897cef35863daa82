"""The installed test family (tests/plugins/colourbars) behind `avatarstream serve` and on a fleet of one replica.

A live session gets its own option through ``model_options``, speaks over the
WebSocket and reports its time to first frame; nothing in serve/ or fleet/
knows the family.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp
import httpx
import pytest
import websockets

from avatarstream.benchmarks.fleet_clients import close, delete, listen, status, wait_for
from avatarstream.benchmarks.fleet_clients import speech as fleet_speech
from serve.serve_harness import Events, running_server, send_paced, speech, ws_url

PLUGIN = "colourbars"
FPS, BLOCK = 25, 12


def test_a_live_session_on_the_server(tmp_path: Path) -> None:
    with running_server(tmp_path, model=PLUGIN, model_options={"bars": 3}) as base:
        asyncio.run(_live(base))


async def _live(base: str) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        schema = (await client.get("/openapi.json")).json()
        assert "bars" in json.dumps(schema), "OpenAPI shows the family's own options"
        refused = await client.post("/sessions", data={"model_options": '{"bars": 99}'})
        assert refused.status_code == 422 and "bars must be between 1 and 16" in refused.json()["detail"]
        created = await client.post("/sessions", data={"identity": "default", "model_options": '{"bars": 6}'})
        assert created.status_code == 201, created.text
        sid = created.json()["id"]
        async with websockets.connect(ws_url(base, sid)) as ws:
            events = Events(ws)
            await send_paced(ws, speech(2.0), piece_s=0.1)
            await events.wait_for(lambda _: sum(e["count"] for e in events.frames() if e["speech"] > 0) >= 1.5 * FPS, timeout=30)
            assert {e["count"] for e in events.frames()} <= {BLOCK}, "the family's blocks, one message each"
        stats = (await client.get(f"/sessions/{sid}")).json()["stats"]
        assert stats["ttff_s"] is not None and stats["frames"] >= 2 * FPS
        print(f"\ncolourbars live session: time to first frame {stats['ttff_s']:.3f} s")
        assert (await client.delete(f"/sessions/{sid}")).status_code == 200


def test_a_session_on_a_fleet_of_one_replica() -> None:
    pytest.importorskip("ray.serve", reason="the fleet extra is not installed: pip install 'avatarstream[fleet]'")
    from avatarstream.fleet.local_cluster import local_fleet

    with local_fleet(nodes=1, replicas=1, model=PLUGIN, model_options={"bars": 2}) as fleet:
        asyncio.run(_fleet_session(fleet.url))


async def _fleet_session(url: str) -> None:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as http:
        async with http.post(f"{url}/sessions", data={"identity": "default", "model_options": '{"bars": 5}'}) as answer:
            assert answer.status == 201, await answer.text()
            sid = (await answer.json())["id"]
        listener = await listen(http, url, sid)
        await listener.send(fleet_speech(1.5))
        await wait_for(lambda: asyncio.sleep(0, listener.last_frame >= 36), 30, "three blocks of frames from the replica")
        assert {count for _, _, count in listener.frames} <= {BLOCK}
        assert (await status(http, url, sid))["stats"]["ttff_s"] is not None
        await close(listener)
        assert (await delete(http, url, sid))["state"] == "closed"
