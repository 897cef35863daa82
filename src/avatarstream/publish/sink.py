"""The interface every output implements: encoded packets in, delivered bytes out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from avatarstream.publish.packets import EncodedPacket, StreamInfo


@dataclass
class SinkReport:
    """What a sink delivered, and what it could not (reported at the end of a run)."""

    name: str
    packets_delivered: int = 0
    packets_dropped: int = 0
    retries: int = 0
    errors: list[str] = field(default_factory=list)


class Sink(ABC):
    """An output. ``open`` once, ``write`` packets in decode order, ``close`` to finalize."""

    name: str

    @abstractmethod
    def open(self, info: StreamInfo) -> None: ...

    @abstractmethod
    def write(self, packet: EncodedPacket) -> None: ...

    @abstractmethod
    def close(self) -> SinkReport: ...
