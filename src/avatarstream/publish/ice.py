"""ICE servers of the WebRTC previews: none by default, so no viewer makes the server contact a third party.

aiortc's default configuration asks a public STUN server for this machine's address on every connection: outbound
traffic to an address nobody chose. Without ICE servers the server offers its host candidates only, which is all a
viewer on the same machine or LAN needs. Across NATs, name your own STUN or TURN servers (``--ice-server``), each
``stun:HOST[:PORT]`` or ``turn:HOST[:PORT][?transport=udp|tcp]`` (``stuns:``/``turns:`` for TLS), a TURN server with
its credentials in front: ``USERNAME:CREDENTIAL@turn:HOST:PORT``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from avatarstream.errors import InputError

if TYPE_CHECKING:
    from aiortc import RTCConfiguration

SCHEMES = ("stun:", "stuns:", "turn:", "turns:")


def check_ice_servers(servers: Iterable[str]) -> tuple[str, ...]:
    """The servers as given, each a STUN or TURN URL (optionally ``USERNAME:CREDENTIAL@`` in front), or one InputError."""
    checked = tuple(servers)
    for server in checked:
        url = server.rpartition("@")[2]
        if not url.startswith(SCHEMES) or len(url.split(":", 1)[1]) == 0:
            raise InputError(f"--ice-server {url!r} is not a STUN or TURN URL; use stun:HOST:PORT, or USERNAME:CREDENTIAL@turn:HOST:PORT")
        if url.startswith(("turn:", "turns:")) and "@" not in server:
            raise InputError(f"--ice-server {url!r} is a TURN server without credentials; give USERNAME:CREDENTIAL@{url}")
    return checked


def rtc_configuration(servers: Iterable[str]) -> RTCConfiguration:
    """aiortc's configuration for ``servers``: an empty list of ICE servers (host candidates only) when none are named."""
    from aiortc import RTCConfiguration, RTCIceServer

    ice = []
    for server in check_ice_servers(servers):
        credentials, _, url = server.rpartition("@")
        username, _, credential = credentials.partition(":")
        ice.append(RTCIceServer(urls=url, username=username or None, credential=credential or None))
    return RTCConfiguration(iceServers=ice)
