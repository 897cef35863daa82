"""A sink that forwards encoded packets to WebRTC viewers (no re-encode); the HTTP side belongs to its owner."""

from __future__ import annotations

from avatarstream.publish.packets import EncodedPacket, StreamInfo
from avatarstream.publish.preview.webrtc import WebRtcRelay
from avatarstream.publish.sink import Sink, SinkReport


class WebRtcSink(Sink):
    """Viewers connect through ``relay`` (offer/answer); a slow viewer never holds up the stream."""

    lossless = False
    reconnect = False

    def __init__(self, name: str = "webrtc", ice_servers: tuple[str, ...] = ()) -> None:
        self.relay = WebRtcRelay(ice_servers)
        self.name = name
        self._forwarded = 0

    def open(self, info: StreamInfo) -> None:
        self.relay.set_stream(info)

    def write(self, packet: EncodedPacket) -> None:
        self.relay.push(packet)
        self._forwarded += 1

    def close(self) -> SinkReport:
        self.relay.close()
        return SinkReport(self.name, packets_delivered=self._forwarded)
