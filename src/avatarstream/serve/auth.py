"""Bearer-token check: every API call carries ``Authorization: Bearer T`` when the server has a token.

Browsers cannot set headers on a WebSocket, so the audio socket may carry the
token as ``?token=T`` instead. Tokens are compared in constant time.
"""

from __future__ import annotations

import secrets

from avatarstream.serve.problems import Unauthorized

CHALLENGE = {"WWW-Authenticate": 'Bearer realm="avatarstream"'}


class TokenCheck:
    """``check(header, query)`` raises Unauthorized unless the token matches (or none is configured)."""

    def __init__(self, token: str | None) -> None:
        self.token = token

    @property
    def required(self) -> bool:
        return self.token is not None

    def check(self, authorization: str | None, query_token: str | None = None) -> None:
        if self.token is None:
            return
        given = query_token
        if authorization:
            scheme, _, value = authorization.partition(" ")
            given = value.strip() if scheme.lower() == "bearer" else None
        if not given or not secrets.compare_digest(given.encode(), self.token.encode()):
            raise Unauthorized("missing or wrong bearer token; send 'Authorization: Bearer <token>'", CHALLENGE)
