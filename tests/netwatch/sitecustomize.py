"""Where every Python process of a test's servers sends packets: an audit hook (PEP 578) that notes each socket connect,
sendto, sendmsg and name lookup with its address.

Audit events are raised by CPython's socket module itself for every call, whatever library makes it (asyncio's datagram
transports, aioice, httpx), so the notes are an observation, not a patch. Python runs this file at start-up in every
process whose PYTHONPATH holds this folder, and with ``$AVATARSTREAM_NETLOG`` set it writes them to
``$AVATARSTREAM_NETLOG/<pid>.log`` (Ray's workers inherit both from the fleet's command). The test process uses
:data:`RECORDER` instead (a hook cannot be removed: it records only while ``RECORDER.on``).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

LOOKUPS = {"socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyname_ex", "socket.gethostbyaddr"}
EVENTS = {"socket.connect", "socket.sendto", "socket.sendmsg", *LOOKUPS}


def _host(event: str, args: tuple[Any, ...]) -> str | None:
    target = (args[0],) if event in LOOKUPS else args[1]
    if not isinstance(target, tuple) or not target or not isinstance(target[0], (str, bytes)):
        return None  # a Unix socket's path, or a sendmsg without an address (a connected socket, noted at connect)
    return target[0].decode() if isinstance(target[0], bytes) else target[0]


class Recorder:
    """(event, host) pairs noted while ``on``."""

    def __init__(self) -> None:
        self.on = False
        self.seen: set[tuple[str, str]] = set()
        sys.addaudithook(self._hook)

    def _hook(self, event: str, args: tuple[Any, ...]) -> None:
        if self.on and event in EVENTS:
            host = _host(event, args)
            if host is not None:
                self.seen.add((event, host))


def _log_to(folder: str) -> None:
    path = os.path.join(folder, f"{os.getpid()}.log")

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event in EVENTS:
            host = _host(event, args)
            if host is not None:
                with open(path, "a") as log:
                    log.write(f"{time.time():.3f} {event} {host}\n")

    sys.addaudithook(hook)


if os.environ.get("AVATARSTREAM_NETLOG"):
    _log_to(os.environ["AVATARSTREAM_NETLOG"])
