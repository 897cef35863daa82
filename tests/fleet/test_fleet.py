"""The fleet on a real local Ray cluster (one head, three one-CPU nodes, loopback only), demo-tiny on every replica.

The tests run in order on one cluster, as one operator's day would: sessions spread over the nodes and are refused when
every slot is busy; a node is lost and only its session moves, continuing its timeline and its speech; a node is lost
while its session has more speech queued than the replica's bound, and the session resumes and speaks it all; the fleet
is scaled down while busy and the replica going away finishes its session first.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import time
import wave

import aiohttp
import numpy as np
import pytest

pytest.importorskip("ray.serve", reason="the fleet extra is not installed: pip install 'avatarstream[fleet]'")

from avatarstream.benchmarks.fleet_clients import RATE, Listener, close, create, delete, health, listen, speech, status, wait_for
from avatarstream.fleet.local_cluster import LocalFleet, local_fleet
from avatarstream.serve.api_audio_ws import MAX_MESSAGE_BYTES

TOKEN = "fleet-test-token-0123"
pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def fleet():
    with local_fleet(nodes=3, replicas=3, model="demo-tiny", token=TOKEN, idle_timeout_s=60.0) as running:
        yield running


def client() -> aiohttp.ClientSession:
    return aiohttp.ClientSession(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=aiohttp.ClientTimeout(total=60))


def test_sessions_spread_over_nodes_and_a_full_fleet_refuses(fleet: LocalFleet) -> None:
    async def scenario() -> None:
        async with client() as http, aiohttp.ClientSession() as anonymous:
            async with anonymous.post(f"{fleet.url}/sessions", data={"identity": "default"}) as answer:
                assert answer.status == 401
            async with http.post(f"{fleet.url}/sessions", data={"model_options": '{"chunk_frames": 0}'}) as answer:
                assert answer.status == 422, "checked at the ingress, before a slot is taken"
                assert "chunk_frames must be between 1 and 1000" in (await answer.json())["detail"]
            opened = []
            for _ in range(3):
                started = time.monotonic()
                code, info, _ = await create(http, fleet.url)
                assert code == 201, info
                opened.append(info)
                print(f"fleet session start: {1000 * (time.monotonic() - started):.0f} ms")
            assert len({s["placement"]["node"] for s in opened}) == 3, "one slot per node: three sessions, three nodes"
            assert all(s["links"]["hls"].startswith(s["placement"]["url"]) for s in opened), "video leaves from the replica"
            code, refused, headers = await create(http, fleet.url)
            assert code == 503 and int(headers["Retry-After"]) > 0, refused
            assert "busy" in refused["detail"]
            a, b = opened[0]["id"], opened[1]["id"]
            assert (await status(http, fleet.url, a))["placement"] == opened[0]["placement"]
            # two sessions stream at once, each from its own replica
            listeners = [await listen(http, fleet.url, sid) for sid in (a, b)]
            await asyncio.gather(*(lst.send(speech(1.5)) for lst in listeners))
            await wait_for(lambda: asyncio.sleep(0, all(lst.last_frame > 40 for lst in listeners)), 20, "frames from both sessions")
            async with http.get(f"{fleet.url}/metrics") as answer:
                metrics = await answer.text()
            assert "avatarstream_fleet_slots_busy 3.0" in metrics and "avatarstream_fleet_slots_free 0.0" in metrics
            assert "avatarstream_fleet_sessions_rejected_total 1.0" in metrics
            assert "avatarstream_time_to_first_frame_seconds_count 3.0" in metrics or "avatarstream_time_to_first_frame_seconds_count 2.0" in metrics
            # b says its last words faster than real time and, once the fleet has taken them, ends over HTTP (which comes after
            # what the fleet has taken, not after bytes still on their way over the socket): the replica speaks them all
            assert listeners[1].socket is not None
            await listeners[1].socket.send_bytes(speech(2.0).astype("<f4").tobytes())
            await wait_for(lambda: taken(http, fleet.url, b, 3.5), 30, "b's last words taken by the fleet")
            async with http.post(f"{fleet.url}/sessions/{b}/end") as answer:
                assert answer.status == 202, await answer.text()
                assert (await answer.json())["id"] == b
            ended = await wait_for(lambda: ended_after_end(http, fleet.url, b), 30, "b ended after its last words")
            assert ended["speech_received_s"] >= 3.5 and ended["speech_done_s"] >= ended["speech_received_s"] - 0.05, ended
            for lst in listeners:
                await close(lst)
            for info in opened:
                assert (await delete(http, fleet.url, info["id"]))["state"] == ("done" if info["id"] == b else "closed")
            assert (await health(http, fleet.url))["sessions"] == 0
            # a batch job takes a slot too; its MP4 is made by its replica (served through the ingress, or from there directly),
            # and its options give it a pipeline of its own there
            form = aiohttp.FormData({"identity": "default", "model_options": '{"chunk_frames": 10, "avatar": 2}'})
            form.add_field("audio", wav(speech(1.0)), filename="speech.wav", content_type="audio/wav")
            async with http.post(f"{fleet.url}/jobs", data=form) as answer:
                assert answer.status == 202, await answer.text()
                job = await answer.json()
            done = await wait_for(lambda: job_done(http, fleet.url, job["id"]), 30, "the job is done")
            assert done["stats"]["frames"] == 25 and done["placement"]["node"] in {s["placement"]["node"] for s in opened}
            async with http.get(f"{fleet.url}/jobs/{job['id']}/video.mp4", allow_redirects=False) as answer:
                assert answer.status == 200, "proxied from the job's replica"
                proxied = await answer.read()
            assert done["links"]["video"].startswith(done["placement"]["url"]), "the link goes to the replica itself"
            async with http.get(done["links"]["video"]) as answer:
                assert answer.status == 200 and await answer.read() == proxied and proxied[4:8] == b"ftyp"
            async with http.get(f"{fleet.url}/sessions/{job['id']}") as answer:
                assert answer.status == 404, "a job's id opens no session"

    asyncio.run(scenario())


async def taken(http: aiohttp.ClientSession, url: str, sid: str, seconds: float) -> bool:
    """Whether the fleet has taken ``seconds`` of the session's speech (its JSON's ``speech_received_s``)."""
    return bool((await status(http, url, sid))["speech_received_s"] >= seconds)


async def ended_after_end(http: aiohttp.ClientSession, url: str, sid: str) -> dict | None:
    """The session's JSON once it is done (it reads ``ending`` until its queued speech is spoken)."""
    info = await status(http, url, sid)
    assert info["state"] in ("running", "ending", "done"), info
    return info if info["state"] == "done" else None


def test_a_lost_node_moves_only_its_session_which_continues(fleet: LocalFleet) -> None:
    async def scenario() -> None:
        async with client() as http:
            (_, a, _), (_, b, _) = await create(http, fleet.url), await create(http, fleet.url)
            lost_node = a["placement"]["node"]
            la, lb = await listen(http, fleet.url, a["id"]), await listen(http, fleet.url, b["id"])
            first, rest = speech(5.0), speech(1.5, pitch=330.0)
            speaking = asyncio.create_task(la.send(first))
            await asyncio.gather(lb.send(speech(1.0)), wait_for(lambda: asyncio.sleep(0, la.last_frame > 40), 20, "A speaks"))
            removed = time.monotonic()
            fleet.remove(lost_node)
            await wait_for(lambda: asyncio.sleep(0, la.close_code is not None), 15, "A's socket closes")
            await speaking
            assert la.close_code == 1012, la.close_code
            seen = la.last_frame  # the last frame the client saw before its socket closed
            print(f"client told after {la.closed_at - removed:.2f} s")
            moved = await wait_for(lambda: running_elsewhere(http, fleet.url, a["id"], lost_node), 30, "A runs on another node")
            print(f"resumed after {time.monotonic() - removed:.2f} s on {moved['placement']['node'][:8]}")
            assert moved["resumes"] == 1 and moved["placement"]["node"] != b["placement"]["node"]
            assert lb.close_code is None, "B's socket stayed open"
            frames_b = lb.last_frame
            taken = round(moved["speech_received_s"] * RATE)
            assert 0 < taken < first.size, "the node was lost mid-speech"
            la2 = await listen(http, fleet.url, a["id"])
            await la2.send(np.concatenate([first[taken:], rest]))
            await wait_for(
                lambda: asyncio.sleep(0, len(la2.frames) > 3 and lb.last_frame > frames_b + 25),
                20,
                f"both stream ({len(la2.frames)}, {lb.last_frame - frames_b}, {la2.close_code}, {lb.close_code})",
            )
            resumed_at = moved["resumed_from_frame"]
            chunk = 12  # demo-tiny's frames per chunk: the state is at most the chunk in flight behind (or ahead of) what the client heard
            assert seen - chunk <= resumed_at <= seen + chunk, (seen, resumed_at)
            assert la2.frames[0][1] >= resumed_at, "the timeline goes on from the saved state"
            starts = [first for _, first, _ in la2.frames]
            assert starts == sorted(starts) and all(f2 == f1 + n for (_, f1, n), (_, f2, _) in zip(la2.frames, la2.frames[1:], strict=False))
            # every sample of speech spoken exactly once: what was lost with the node was sent again, nothing twice
            done = await wait_for(lambda: status_speech_done(http, fleet.url, a["id"], first.size + rest.size), 20, "all of A's speech spoken")
            assert abs(done["speech_done_s"] - (first.size + rest.size) / RATE) < 0.002
            assert lb.close_code is None
            for lst in (la2, lb):
                await close(lst)
            assert (await delete(http, fleet.url, a["id"]))["resumes"] == 1
            await delete(http, fleet.url, b["id"])

    asyncio.run(scenario())


def test_a_lost_node_with_much_speech_queued_resumes_and_speaks_it_all(fleet: LocalFleet) -> None:
    """More speech queued than the replica's bound takes: what the lost replica had not spoken is more than one message to
    the new one may carry (issue 39: the session sat in ``resuming`` and its new replica went to the next session)."""
    bound_s = fleet.settings.serve.max_queued_audio_s
    one_message_s = MAX_MESSAGE_BYTES / 4 / RATE  # the most f32 speech one message to a replica may carry

    async def scenario() -> None:
        async with client() as http:
            await wait_for(lambda: slots(http, fleet.url, lambda h: h["max_sessions"] >= 2), 60, "two replicas running")
            code, a, _ = await create(http, fleet.url)
            assert code == 201, a
            la = await listen(http, fleet.url, a["id"])
            queued = speech(bound_s + 15.0)
            sending = asyncio.create_task(send_fast(la, queued))
            full = await wait_for(lambda: replica_queue_over(http, fleet.url, a["id"], one_message_s), 60, "the replica's queue fills")
            assert full["speech_received_s"] * RATE == queued.size, "the ingress took it all: it holds what the replica has no room for"
            removed = time.monotonic()
            fleet.remove(a["placement"]["node"])
            await wait_for(lambda: asyncio.sleep(0, la.close_code is not None), 15, "A's socket closes")
            told = time.monotonic()
            assert la.close_code == 1012, la.close_code
            sending.cancel()
            timeout_s = fleet.settings.resume_timeout_s  # resumed, or failed with a reason, within --resume-timeout
            moved = await wait_for(lambda: resumed_or_failed(http, fleet.url, a["id"]), timeout_s + 5, "A resumes or fails")
            print(
                f"resumed with {full['stats']['queued_audio_s']:.0f} s queued after {time.monotonic() - removed:.2f} s ({time.monotonic() - told:.2f} s after the 1012)"
            )
            assert moved["state"] == "running" and moved["resumes"] == 1 and moved["placement"]["node"] != a["placement"]["node"], moved
            code, other, _ = await create(http, fleet.url)
            assert code == 503 or other["placement"]["replica"] != moved["placement"]["replica"], ("A's new replica is A's alone", other)
            if code == 201:
                await delete(http, fleet.url, other["id"])
            la2 = await listen(http, fleet.url, a["id"])
            await wait_for(lambda: asyncio.sleep(0, len(la2.frames) > 3), 20, "A streams on")
            assert la2.frames[0][1] >= moved["resumed_from_frame"]
            # every sample taken is spoken or in the new replica's queue, once: the speech sent again, then the rest from the ingress
            done = await wait_for(lambda: all_at_replica(http, fleet.url, a["id"], queued.size), 2 * bound_s, "all of A's speech at its new replica")
            assert done["speech_done_s"] > full["speech_done_s"] + 10.0, ("what was sent again is being spoken", full, done)
            # and the next session gets a replica of its own that works, once there is room for one
            fleet.add_node()
            code, b, _ = await wait_for(lambda: created(http, fleet.url), 90, "a session on the new node")
            assert b["placement"]["replica"] != moved["placement"]["replica"], b
            lb = await listen(http, fleet.url, b["id"])
            await asyncio.gather(lb.send(speech(1.0)), wait_for(lambda: asyncio.sleep(0, lb.last_frame > 25), 30, "B streams"))
            for lst in (la2, lb):
                await close(lst)
            assert (await delete(http, fleet.url, a["id"]))["resumes"] == 1
            await delete(http, fleet.url, b["id"])

    asyncio.run(scenario())


async def send_fast(listener: Listener, samples: np.ndarray) -> None:
    """As fast as the fleet reads, in 1 s pieces (it stops reading while it holds what the replica has no room for)."""
    assert listener.socket is not None
    with contextlib.suppress(aiohttp.ClientError, ConnectionError):
        for i in range(0, samples.size, RATE):
            await listener.socket.send_bytes(samples[i : i + RATE].astype("<f4").tobytes())


async def replica_queue_over(http: aiohttp.ClientSession, url: str, sid: str, seconds: float) -> dict | None:
    info = await status(http, url, sid)
    return info if info["stats"]["queued_audio_s"] > seconds else None


async def resumed_or_failed(http: aiohttp.ClientSession, url: str, sid: str) -> dict | None:
    info = await status(http, url, sid)
    return info if info["state"] == "failed" or (info["state"] == "running" and info["resumes"]) else None


async def all_at_replica(http: aiohttp.ClientSession, url: str, sid: str, samples: int) -> dict | None:
    """The session's JSON once its replica has every sample: spoken, or queued there (to a chunk: speech_done_s is reported
    after each chunk, the queue read now)."""
    info = await status(http, url, sid)
    at_replica = (info["speech_done_s"] + info["stats"]["queued_audio_s"]) * RATE
    assert at_replica <= samples + RATE, ("nothing is spoken twice", info)
    return info if at_replica >= samples - RATE else None


async def created(http: aiohttp.ClientSession, url: str) -> tuple[int, dict, dict] | None:
    answer = await create(http, url)
    return answer if answer[0] == 201 else None


def test_a_redeploy_drains_busy_replicas(fleet: LocalFleet) -> None:
    """A new deployment (here: one replica instead of two) replaces every replica; the old ones take no new session and
    stop only when their session has ended. (Serve replaces the ingress too on such a deploy: docs/fleet.md.)"""

    async def scenario() -> None:
        async with client() as http:
            await wait_for(lambda: slots(http, fleet.url, lambda h: h["max_sessions"] == 2), 30, "two replicas running")
            (_, a, _), (_, b, _) = await create(http, fleet.url), await create(http, fleet.url)
            listeners = [await listen(http, fleet.url, s["id"]) for s in (a, b)]
            deploying = fleet.redeploy(min_replicas=1, max_replicas=1)
            # a rolling update: Serve stops the old replicas (one or both at once) and starts the new one where there is room
            await wait_for(lambda: slots(http, fleet.url, lambda h: h["draining"] >= 1), 90, "a busy replica drains")
            heard = [lst.last_frame for lst in listeners]
            # a second of video each (the new replica loading its model beside them can slow them on 2 cores)
            await wait_for(lambda: asyncio.sleep(0, all(lst.last_frame > seen + 25 for lst, seen in zip(listeners, heard, strict=True))), 20, "both stream on")
            assert all(lst.close_code is None for lst in listeners), "the drain closed no socket"
            assert (await health(http, fleet.url))["draining"] >= 1, "a busy replica does not stop"
            old = (a["placement"]["replica"], b["placement"]["replica"])
            code, new, _ = await create(http, fleet.url)
            assert code == 503 or new["placement"]["replica"] not in old, ("no new session on a replica that is going away", new)
            if code == 201:
                await delete(http, fleet.url, new["id"])
            for lst in listeners:  # the clients leave without a close frame: their sessions end, and so does the drain
                assert lst.socket is not None and lst.socket._response is not None
                lst.socket._response.connection.transport.abort()
            await wait_for(lambda: slots(http, fleet.url, lambda h: h["draining"] == 0 and h["max_sessions"] == 1), 90, "the new replica took over")
            code, new, _ = await create(http, fleet.url)
            assert code == 201 and new["placement"]["replica"] not in old, new
            await delete(http, fleet.url, new["id"])
            await asyncio.to_thread(deploying.join, 30)

    asyncio.run(scenario())


async def job_done(http: aiohttp.ClientSession, url: str, jid: str) -> dict | None:
    async with http.get(f"{url}/jobs/{jid}") as answer:
        info = await answer.json()
    return info if info["state"] == "done" else None


def wav(samples: np.ndarray) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as file:
        file.setnchannels(1)
        file.setsampwidth(2)
        file.setframerate(RATE)
        file.writeframes((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())
    return out.getvalue()


async def status_speech_done(http: aiohttp.ClientSession, url: str, sid: str, samples: int) -> dict | None:
    info = await status(http, url, sid)
    return info if info["state"] == "running" and info["speech_done_s"] * RATE >= samples - RATE * 0.001 else None


async def running_elsewhere(http: aiohttp.ClientSession, url: str, sid: str, node: str) -> dict | None:
    info = await status(http, url, sid)
    return info if info["state"] == "running" and info["placement"]["node"] != node else None


async def slots(http: aiohttp.ClientSession, url: str, check) -> dict | None:
    found = await health(http, url)
    return found if check(found) else None


def test_autoscaling_adds_a_slot_when_the_slots_are_busy(fleet: LocalFleet) -> None:
    """Between one and two replicas, keeping 80% busy: one busy slot asks for a second."""

    async def scenario() -> None:
        async with client() as http:
            deploying = fleet.redeploy(min_replicas=1, max_replicas=2, target_busy=0.8)
            await asyncio.to_thread(deploying.join, 60)
            await wait_for(lambda: slots(http, fleet.url, lambda h: h["max_sessions"] == 1 and h["draining"] == 0), 60, "one replica to start with")
            code, a, _ = await create(http, fleet.url)
            assert code == 201, a
            grown = await wait_for(lambda: slots(http, fleet.url, lambda h: h["max_sessions"] == 2), 60, "a second replica")
            assert grown["sessions"] == 1
            code, b, _ = await create(http, fleet.url)
            assert code == 201 and b["placement"]["node"] != a["placement"]["node"], b
            for info in (a, b):
                await delete(http, fleet.url, info["id"])

    asyncio.run(scenario())
