"""What the routes of one app share, reached through FastAPI dependencies."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from fastapi import Depends, Request

from avatarstream.serve.auth import TokenCheck
from avatarstream.serve.problems import UnsupportedType
from avatarstream.serve.session import Engine
from avatarstream.serve.sessions import SessionManager
from avatarstream.serve.settings import ServeSettings

T = TypeVar("T")
Blocking = Callable[..., Awaitable[Any]]  # runs file and codec work off the event loop: ServerContext.blocking, asyncio.to_thread


@dataclass
class ServerContext:
    settings: ServeSettings
    engine: Engine
    manager: SessionManager
    auth: TokenCheck

    async def blocking(self, fn: Callable[..., T], *args: Any) -> T:
        """Run file and codec work off the event loop, on the app's own threads."""
        return await asyncio.get_running_loop().run_in_executor(self.engine.executor, fn, *args)


def server(request: Request) -> ServerContext:
    return request.app.state.server


def authorized(request: Request) -> None:
    """Dependency of every API route: the bearer token, when the server has one."""
    server(request).auth.check(request.headers.get("authorization"))


def form_body(request: Request) -> None:
    """Dependency of routes that take form fields: another declared body type is refused, not ignored."""
    content_type = request.headers.get("content-type")
    if content_type and not content_type.startswith(("multipart/form-data", "application/x-www-form-urlencoded")):
        raise UnsupportedType(f"send the fields as multipart/form-data, got Content-Type {content_type}")


Server = Annotated[ServerContext, Depends(server)]
