"""HTTP answers for what a client got wrong or what the server cannot do now; each says what to do."""

from __future__ import annotations


class ServeError(Exception):
    """An error with the HTTP status (and headers) it is answered with."""

    status = 500

    def __init__(self, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.headers = headers or {}


class NotFound(ServeError):
    status = 404


class Unauthorized(ServeError):
    status = 401


class TooLarge(ServeError):
    status = 413


class UnsupportedType(ServeError):
    status = 415


class Busy(ServeError):
    status = 503


class Conflict(ServeError):
    status = 409


def ending() -> Conflict:
    """Speech sent to a session that is ending (POST /end): the same answer from a server and a fleet."""
    return Conflict("this session is ending: it speaks what was queued, then closes; open a new session to say more")
