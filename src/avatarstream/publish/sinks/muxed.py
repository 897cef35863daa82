"""A sink that remuxes packets through one FFmpeg output; subclasses say which output."""

from __future__ import annotations

from abc import abstractmethod

from avatarstream.publish.muxer import PacketMuxer
from avatarstream.publish.packets import EncodedPacket, StreamInfo
from avatarstream.publish.sink import Sink, SinkReport


class MuxedSink(Sink):
    """Opens a PacketMuxer per session and counts what it wrote."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._muxer: PacketMuxer | None = None
        self._written = 0

    @abstractmethod
    def _open_muxer(self, info: StreamInfo) -> PacketMuxer: ...

    def open(self, info: StreamInfo) -> None:
        self._written = 0
        self._muxer = self._open_muxer(info)

    def write(self, packet: EncodedPacket) -> None:
        if self._muxer is None:
            raise RuntimeError(f"{self.name} is not open")
        self._muxer.write(packet)
        self._written += 1

    def close(self) -> SinkReport:
        muxer, self._muxer = self._muxer, None
        if muxer is not None:
            muxer.close()
        return SinkReport(self.name, packets_delivered=self._written)
