"""Structured logs: one JSON object per line, with the fields each event carries."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

log = logging.getLogger("avatarstream.serve")


def event(name: str, level: int = logging.INFO, **fields: Any) -> None:
    """Log ``name`` with ``fields``; the JSON formatter puts them next to the message."""
    log.log(level, name, extra={"fields": fields})


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": record.getMessage(),
            **getattr(record, "fields", {}),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def configure_logging(level: str = "info") -> None:
    """Send every log line of the process to stderr as JSON."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())


#: What uvicorn's WebSocket protocols log, at error level, when the app answers a handshake with an HTTP response.
REFUSED_HANDSHAKE = "ASGI callable returned without completing handshake."


class RefusedHandshakes(logging.Filter):
    """A handshake the app refuses with an HTTP answer (401, 404, 409, 422: api_audio_ws.refuse) is a client's mistake, not a
    server failure; uvicorn logs it at error level all the same. This filter logs that line at info instead. The app has
    no other way to leave a handshake incomplete: every other path accepts the socket first."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg == REFUSED_HANDSHAKE:
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


def quiet_refused_handshakes() -> None:
    """Install :class:`RefusedHandshakes` on uvicorn's logger (once per process)."""
    logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, RefusedHandshakes) for f in logger.filters):
        logger.addFilter(RefusedHandshakes())
