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
    lossless: bool = False  # a file output, which must get every packet (a live sink may drop some and go on)

    @property
    def complete(self) -> bool:
        """Everything was delivered: nothing dropped, nothing failed."""
        return not self.packets_dropped and not self.errors

    @property
    def failed(self) -> bool:
        """A file output that did not get everything: what it holds is not the whole stream."""
        return self.lossless and not self.complete

    def summary(self) -> str:
        """One line: what went wrong (its last errors) and what was lost."""
        return f"{'; '.join(self.errors[-3:]) or 'no error'} ({self.packets_delivered} packets written, {self.packets_dropped} dropped)"


class Sink(ABC):
    """An output. ``open`` once, ``write`` packets in decode order, ``close`` to finalize.

    The publisher runs each sink on its own thread. ``lossless`` sinks (files)
    are never skipped: a full queue makes the publisher wait. Other sinks
    lose packets, up to the next keyframe, rather than hold anyone up; when
    ``reconnect`` is set, a sink whose ``open`` or ``write`` raised is closed
    and opened again with backoff, at a keyframe. ``close`` reports what the
    current session (since the last ``open``) delivered.
    """

    name: str
    lossless: bool = False
    reconnect: bool = True

    @abstractmethod
    def open(self, info: StreamInfo) -> None: ...

    @abstractmethod
    def write(self, packet: EncodedPacket) -> None: ...

    @abstractmethod
    def close(self) -> SinkReport: ...
