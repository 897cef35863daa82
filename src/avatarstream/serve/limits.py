"""Request-size limit for every HTTP request, declared or actually sent."""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send


def too_large_message(max_bytes: int) -> str:
    return f"the upload is larger than this server's limit of {max_bytes / 2**20:.1f} MiB; send a shorter clip"


class BodyLimit:
    """ASGI middleware: answer 413 once a request body passes ``max_bytes`` (declared or actually sent)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(send)
            return
        received = 0
        overflow = False
        started = False

        async def counted() -> Message:
            nonlocal received, overflow
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    overflow = True
                    return {"type": "http.disconnect"}  # the app stops reading; the answer is ours
            return message

        async def guarded(message: Message) -> None:
            nonlocal started
            if overflow:
                return
            started = True
            await send(message)

        try:
            await self.app(scope, counted, guarded)
        except Exception:
            if not overflow:
                raise
        if overflow and not started:
            await self._refuse(send)

    async def _refuse(self, send: Send) -> None:
        body = json.dumps({"detail": too_large_message(self.max_bytes)}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), (b"connection", b"close")],
            }
        )
        await send({"type": "http.response.body", "body": body})
