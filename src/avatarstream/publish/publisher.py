"""Chunks in, one encode, packets out to every sink (DESIGN.md §7).

The caller (the inference thread) only queues chunks: a bounded queue in front
of the encoder thread applies backpressure, and each sink has its own thread
and queue behind it (see runner.py), so a slow or failing network sink never
reaches back to generation or to the other sinks.
"""

from __future__ import annotations

from avatarstream.lifecycle import ClosesOnExit
from avatarstream.publish.background import BackgroundEncoder
from avatarstream.publish.encoders import Encoder, create_encoder
from avatarstream.publish.frames import FrameSink
from avatarstream.publish.media import MediaChunk
from avatarstream.publish.packets import EncodedPacket
from avatarstream.publish.runner import Backoff, SinkRunner
from avatarstream.publish.settings import EncoderSettings
from avatarstream.publish.sink import Sink, SinkReport


class Publisher(ClosesOnExit):
    """Owns the encoder and the sinks; ``close`` (or leaving ``with``) finalizes every output.

    ``frame_sinks`` take the raw frames before the encoder (lossless outputs,
    ``publish.frames``); with no packet ``sinks`` nothing is encoded at all.

    ``close`` encodes what is still queued, flushes the encoder, lets each sink
    deliver what it holds (network sinks for at most ``close_timeout_s``) and
    returns one report per sink, in the order the sinks were given.
    """

    def __init__(
        self,
        settings: EncoderSettings,
        sinks: list[Sink],
        encoder: str | Encoder = "pyav",
        frame_sinks: list[FrameSink] | None = None,
        max_queued_chunks: int = 4,
        max_queued_packets: int = 512,
        backoff: Backoff = Backoff(),
        close_timeout_s: float = 10.0,
    ) -> None:
        frame_sinks = list(frame_sinks or [])
        if not sinks and not frame_sinks:
            raise ValueError("a publisher needs at least one sink")
        for frame_sink in frame_sinks:
            frame_sink.open()  # a folder that cannot be written fails here, before any frame is made
        self.encoder = (create_encoder(encoder, settings) if isinstance(encoder, str) else encoder) if sinks else None
        self._fanout = _FanOut(self.encoder, [SinkRunner(s, max_queued_packets, backoff) for s in sinks], close_timeout_s, frame_sinks)
        self._background = BackgroundEncoder(self._fanout, max_queued_chunks)
        self.reports: list[SinkReport] = []

    def submit(self, chunk: MediaChunk) -> None:
        """Queue a chunk; waits while the encoder is a full queue behind. Encoder failures raise PublishError."""
        self._background.submit(chunk)

    @property
    def sinks(self) -> list[Sink]:
        return [runner.sink for runner in self._fanout.runners]

    @property
    def frame_sinks(self) -> list[FrameSink]:
        return self._fanout.frame_sinks

    def failed_outputs(self) -> list[str]:
        """The file outputs that have failed so far, each as ``name: first error`` (a live session stops on one)."""
        return [f"{runner.sink.name}: {runner.failed}" for runner in self._fanout.runners if runner.failed is not None]

    @property
    def frames_encoded(self) -> int:
        return self._background.frames_written

    def close(self) -> list[SinkReport]:
        """Finalize every output and return the per-sink reports; safe to call twice."""
        try:
            self._background.close()
        finally:
            self.reports = self._fanout.reports
        return self.reports


class _FanOut:
    """The encoder thread's writer: frames to every frame sink, then encode each chunk once and hand the packets to every runner."""

    def __init__(self, encoder: Encoder | None, runners: list[SinkRunner], close_timeout_s: float, frame_sinks: list[FrameSink]) -> None:
        self._encoder = encoder
        self.runners = runners
        self.frame_sinks = frame_sinks
        self._close_timeout_s = close_timeout_s
        self._started = False
        self._held: list[EncodedPacket] = []  # only until the encoder knows its stream headers
        self.reports: list[SinkReport] = []

    def write(self, chunk: MediaChunk) -> None:
        for frame_sink in self.frame_sinks:
            frame_sink.write(chunk)
        if self._encoder is not None:
            self._deliver(self._encoder.encode(chunk))

    def close(self) -> None:
        try:
            if self._encoder is not None:
                self._deliver(self._encoder.flush())
        finally:
            if self._encoder is not None:
                self._encoder.close()
            self.reports = [r.finish(None if r.sink.lossless else self._close_timeout_s) for r in self.runners]
            self.reports += [f.close() for f in self.frame_sinks]

    def _deliver(self, packets: list[EncodedPacket]) -> None:
        assert self._encoder is not None, "packets come from the encoder"
        if not self._started:
            info = self._encoder.stream_info
            if info is None:
                self._held += packets
                return
            for runner in self.runners:
                runner.start(info)
            self._started = True
            packets, self._held = self._held + packets, []
        for packet in packets:
            for runner in self.runners:
                runner.put(packet)
