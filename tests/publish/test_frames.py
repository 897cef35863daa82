"""--frames: one lossless PNG per frame, through the publisher (alone or beside an encode), the API and the CLI."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import avatarstream
from avatarstream import Outputs
from avatarstream.cli.main import main
from avatarstream.errors import InputError
from avatarstream.publish.frames import PngFrameSink, frame_paths
from avatarstream.publish.media import MediaChunk
from avatarstream.publish.publisher import Publisher
from avatarstream.publish.settings import EncoderSettings
from avatarstream.publish.sinks import Mp4FileSink
from mp4_checks import decode

SETTINGS = EncoderSettings(width=32, height=16, fps=25, preset="ultrafast")


def read_frames(folder: Path) -> np.ndarray:
    return np.stack([np.asarray(Image.open(p)) for p in frame_paths(folder)])


def test_frames_are_written_exactly_beside_the_mp4(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    chunks = [MediaChunk(f, rng.integers(0, 256, (n, 16, 32, 3), dtype=np.uint8), np.zeros((2, n * 1920), np.float32)) for f, n in ((0, 7), (7, 5))]
    with Publisher(SETTINGS, [Mp4FileSink(tmp_path / "v.mp4")], frame_sinks=[PngFrameSink(tmp_path / "frames")]) as publisher:
        for chunk in chunks:
            publisher.submit(chunk)
    assert [p.name for p in frame_paths(tmp_path / "frames")] == [f"{i:06d}.png" for i in range(12)]
    np.testing.assert_array_equal(read_frames(tmp_path / "frames"), np.concatenate([c.frames for c in chunks]))
    assert len(decode(tmp_path / "v.mp4").frames) == 12
    assert [r.packets_delivered for r in publisher.reports][-1] == 12


def test_render_writes_frames_alone_and_refuses_a_used_folder(tmp_path: Path) -> None:
    fast = {"model": "demo-tiny", "model_options": {"chunk_frames": 6, "interp_frames": 2}, "threads": 1}
    result = avatarstream.render(out=None, frames=tmp_path / "frames", **fast)  # type: ignore[arg-type]
    assert len(frame_paths(tmp_path / "frames")) == result.report["frames"] > 0
    with pytest.raises(InputError, match="not empty"):
        avatarstream.render(out=Outputs(frames=tmp_path / "frames"), **fast)  # type: ignore[arg-type]
    (tmp_path / "file").write_text("")
    assert main(["render", "--model", "demo-tiny", "--out", "-", "--frames", str(tmp_path / "file")]) == 2
