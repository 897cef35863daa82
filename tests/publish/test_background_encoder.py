"""BackgroundEncoder: backpressure, failures surfacing in the caller, same output as inline."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import av
import pytest

from avatarstream.errors import PublishError
from avatarstream.publish import BackgroundEncoder, EncoderSettings, MediaChunk, Mp4Writer
from mp4_checks import decode, make_chunks

SETTINGS = EncoderSettings(width=64, height=48, fps=25)


class SlowRecorder:
    """A writer that takes its time and records how far the producer ran ahead of it."""

    def __init__(self, fail_on: int | None = None) -> None:
        self.submitted = 0
        self.written = 0
        self.max_ahead = 0
        self.closed = False
        self.fail_on = fail_on
        self.lock = threading.Lock()

    def write(self, chunk: MediaChunk) -> None:
        if self.written == self.fail_on:
            raise ValueError("codec exploded")
        time.sleep(0.01)
        with self.lock:
            self.written += 1

    def note_submitted(self) -> None:
        with self.lock:
            self.submitted += 1
            self.max_ahead = max(self.max_ahead, self.submitted - self.written)

    def close(self) -> None:
        self.closed = True


def test_backpressure_bounds_the_queue() -> None:
    recorder = SlowRecorder()
    chunk = make_chunks([1])[0]
    with BackgroundEncoder(recorder, max_queued_chunks=3) as encoder:
        for _ in range(30):
            encoder.submit(chunk)
            recorder.note_submitted()
    assert recorder.written == 30
    assert recorder.closed
    assert encoder.max_queue_depth_seen == 3  # the fast producer filled it, never beyond
    assert recorder.max_ahead <= 3 + 1  # queued chunks plus the one being written
    assert encoder.frames_written == 30


def test_worker_error_surfaces_on_submit() -> None:
    recorder = SlowRecorder(fail_on=2)
    chunk = make_chunks([1])[0]
    encoder = BackgroundEncoder(recorder, max_queued_chunks=2)
    with pytest.raises(PublishError, match="encoding failed: codec exploded") as caught:
        for _ in range(50):
            encoder.submit(chunk)
    assert isinstance(caught.value.__cause__, ValueError)
    encoder.close()  # already reported: no second raise
    assert recorder.closed
    assert encoder.frames_written == 2


def test_worker_error_surfaces_on_close() -> None:
    recorder = SlowRecorder(fail_on=0)
    encoder = BackgroundEncoder(recorder)
    encoder.submit(make_chunks([1])[0])
    with pytest.raises(PublishError, match="codec exploded"):
        encoder.close()
    encoder.close()


def test_writer_close_error_surfaces() -> None:
    class FailingClose(SlowRecorder):
        def close(self) -> None:
            raise PublishError("cannot finalize output x.mp4: disk full")

    with pytest.raises(PublishError, match="disk full"), BackgroundEncoder(FailingClose()) as encoder:
        encoder.submit(make_chunks([1])[0])


def test_same_output_as_writing_inline(tmp_path: Path) -> None:
    chunks = make_chunks([7, 13, 1, 25, 14])
    inline, background = tmp_path / "inline.mp4", tmp_path / "background.mp4"
    with Mp4Writer(inline, SETTINGS) as writer:
        for chunk in chunks:
            writer.write(chunk)
    with BackgroundEncoder(Mp4Writer(background, SETTINGS), max_queued_chunks=2) as encoder:
        for chunk in chunks:
            encoder.submit(chunk)
    assert encoder.frames_written == 60
    assert len(decode(background).frames) == len(decode(inline).frames) == 60
    assert video_packets(background) == video_packets(inline)


def video_packets(path: Path) -> list[bytes]:
    with av.open(str(path)) as container:
        return [bytes(p) for p in container.demux(video=0) if p.size]


@pytest.mark.parametrize("error", [RuntimeError("inference blew up"), KeyboardInterrupt()])
def test_finalized_when_body_raises(tmp_path: Path, error: BaseException) -> None:
    path = tmp_path / "failed.mp4"
    with pytest.raises(type(error)), BackgroundEncoder(Mp4Writer(path, SETTINGS)) as encoder:
        for chunk in make_chunks([10, 10]):
            encoder.submit(chunk)
        raise error
    assert len(decode(path).frames) == 20


def test_rejects_empty_queue() -> None:
    with pytest.raises(ValueError, match="max_queued_chunks must be at least 1"):
        BackgroundEncoder(SlowRecorder(), max_queued_chunks=0)
