"""Which engine an adapter's arguments choose: a model in this process, or a session on a server (never a mix)."""

from __future__ import annotations

from typing import Any

from avatarstream.errors import InputError
from avatarstream.families.base import Family
from avatarstream.families.registry import DEFAULT_MODEL
from avatarstream.integrations.engine import AvatarEngine


def engine_for(model: str | Family | None, server_url: str | None, token: str | None, avatar: dict[str, Any]) -> AvatarEngine:
    """An engine in this process (``model`` and ``avatar`` as ``avatarstream.render`` takes them) or on a server
    (``server_url``, ``token``; ``avatar``: its session's ``reference``, ``model_options``, ``prompt``, ``seed``)."""
    try:
        if server_url is None:
            if token is not None:
                raise InputError("token is for a server: give server_url with it, or drop it to render in this process")
            from avatarstream.integrations.local_engine import LocalEngine

            return LocalEngine(model or DEFAULT_MODEL, **avatar)
        if model is not None:
            raise InputError("model chooses a model in this process; a server (server_url) runs its own: give one or the other")
        from avatarstream.integrations.remote_engine import RemoteEngine

        return RemoteEngine(server_url, token=token, **avatar)
    except TypeError as err:  # an argument this back-end does not take
        raise InputError(f"{err}; see the adapter's arguments (docs/agents.md)") from None
