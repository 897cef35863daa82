"""The encoder throughput benchmark, run small; `python -m avatarstream.publish.bench` reports 720p."""

from __future__ import annotations

import pytest

from avatarstream.publish.bench import encode_throughput, main, synthetic_chunk
from avatarstream.publish.encoders import BACKENDS
from avatarstream.publish.settings import EncoderSettings
from publish_needs import require_gstreamer

SMALL_720P = EncoderSettings(width=1280, height=720, fps=25, preset="ultrafast")


@pytest.mark.parametrize("backend", BACKENDS)
def test_throughput_720p(backend: str) -> None:
    if backend == "gstreamer":
        require_gstreamer()
    result = encode_throughput(backend, SMALL_720P, frames=20, per_chunk=10)
    assert (result.width, result.height, result.frames) == (1280, 720, 20)
    assert result.fps > 5  # a sanity floor on 2 CPU cores; the report gives the real figure


def test_frames_move_and_audio_matches() -> None:
    chunk = synthetic_chunk(10, 3, EncoderSettings(width=64, height=48, fps=25))
    assert chunk.first_frame == 10 and chunk.frames.shape == (3, 48, 64, 3)
    assert (chunk.frames[0] != chunk.frames[1]).any()
    assert chunk.audio.shape == (2, 3 * 48000 // 25)


def test_report_line(capsys: pytest.CaptureFixture[str]) -> None:
    main(["--encoder", "pyav", "--width", "320", "--height", "240", "--frames", "10", "--preset", "ultrafast"])
    assert "pyav       320x240 preset=ultrafast:" in capsys.readouterr().out
