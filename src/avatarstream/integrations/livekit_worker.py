"""The avatar worker behind ``avatarstream livekit-worker``: it keeps a model warm and joins LiveKit rooms on request.

An agent's ``AvatarstreamAvatar(dispatcher_url=...)`` posts ``{"room", "agent_identity", "avatar_identity"}`` to
``/launch``; the worker mints its own access token (it holds the LiveKit API key; the token lets it publish on the
agent's behalf), joins the room, takes the agent's speech from LiveKit's data streams (``DataStreamAudioReceiver``)
and publishes the avatar through livekit-agents' ``AvatarRunner``, until the room closes or the agent leaves.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from aiohttp import web
from livekit import api, rtc
from livekit.agents.types import ATTRIBUTE_PUBLISH_ON_BEHALF
from livekit.agents.voice.avatar import DataStreamAudioReceiver

from avatarstream.integrations.engine import AvatarEngine
from avatarstream.integrations.livekit import AvatarstreamVideoGenerator, run_avatar

log = logging.getLogger(__name__)
FIELDS = ("room", "agent_identity", "avatar_identity")


class AvatarWorker:
    """Runs one avatar per room it is asked to join, at most ``max_rooms`` at once."""

    def __init__(self, livekit_url: str, api_key: str, api_secret: str, make_engine: Callable[[], AvatarEngine], *, max_rooms: int = 1) -> None:
        self.livekit_url, self.api_key, self.api_secret = livekit_url, api_key, api_secret
        self.make_engine = make_engine
        self.max_rooms = max_rooms
        self.rooms: dict[str, asyncio.Task[None]] = {}

    def token(self, room: str, agent_identity: str, avatar_identity: str) -> str:
        grants = api.VideoGrants(room_join=True, room=room)
        token = api.AccessToken(self.api_key, self.api_secret).with_identity(avatar_identity).with_name("avatarstream").with_kind("agent")
        return token.with_grants(grants).with_attributes({ATTRIBUTE_PUBLISH_ON_BEHALF: agent_identity}).to_jwt()

    async def launch(self, room_name: str, agent_identity: str, avatar_identity: str) -> None:
        """Join the room now (an error reaches the agent), then run the avatar there in the background."""
        room = rtc.Room()
        await room.connect(self.livekit_url, self.token(room_name, agent_identity, avatar_identity))
        generator = AvatarstreamVideoGenerator(self.make_engine())
        try:
            runner = await run_avatar(room, DataStreamAudioReceiver(room, sender_identity=agent_identity), generator)
        except BaseException:
            await generator.aclose()
            await room.disconnect()
            raise
        self.rooms[room_name] = asyncio.create_task(self._serve(room, runner, generator), name=f"avatar-{room_name}")

    async def _serve(self, room: rtc.Room, runner: Any, generator: AvatarstreamVideoGenerator) -> None:
        left = asyncio.Event()
        room.on("disconnected", lambda *_: left.set())
        try:
            await left.wait()
        finally:
            await runner.aclose()
            await generator.aclose()
            with contextlib.suppress(Exception):
                await room.disconnect()
            self.rooms.pop(room.name, None)
            log.info("avatar left room %s", room.name)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/launch", self._launch)
        app.router.add_get("/healthz", self._health)
        app.on_cleanup.append(self._close_all)
        return app

    async def _launch(self, request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except ValueError:
            return web.json_response({"detail": "the body must be JSON: {" + ", ".join(f'"{f}": ...' for f in FIELDS) + "}"}, status=422)
        if not isinstance(body, dict) or not all(isinstance(body.get(f), str) and body[f] for f in FIELDS):
            return web.json_response({"detail": f"give {', '.join(FIELDS)} as strings"}, status=422)
        if body["room"] in self.rooms:
            return web.json_response({"detail": f"the avatar is already in room {body['room']}"}, status=409)
        if len(self.rooms) >= self.max_rooms:
            return web.json_response({"detail": f"this worker runs {self.max_rooms} avatar(s) at once; try another worker"}, status=503)
        try:
            await self.launch(body["room"], body["agent_identity"], body["avatar_identity"])
        except Exception as err:  # noqa: BLE001 -- answered to the agent, which decides what a missing avatar means
            log.warning("cannot join room %s: %s", body["room"], err)
            return web.json_response({"detail": f"cannot join room {body['room']}: {err}"}, status=502)
        return web.json_response({"room": body["room"], "identity": body["avatar_identity"]})

    async def _health(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "ok", "rooms": len(self.rooms), "max_rooms": self.max_rooms})

    async def _close_all(self, app: web.Application) -> None:
        for task in list(self.rooms.values()):
            task.cancel()
        await asyncio.gather(*self.rooms.values(), return_exceptions=True)
