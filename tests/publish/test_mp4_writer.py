"""Mp4Writer: a known stream read back independently, failures, and bad paths."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest

from avatarstream.errors import PublishError
from avatarstream.publish import EncoderSettings, MediaChunk, Mp4Writer
from mp4_checks import colour, decode, make_chunks, tone

SETTINGS = EncoderSettings(width=64, height=48, fps=25)
SIZES = [7, 13, 1, 25, 14]  # 60 frames in uneven chunks


def write(path: Path, chunks: list[MediaChunk], settings: EncoderSettings = SETTINGS) -> None:
    with Mp4Writer(path, settings) as writer:
        for chunk in chunks:
            writer.write(chunk)


def test_known_stream_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "known.mp4"
    write(path, make_chunks(SIZES))

    out = decode(path)

    assert len(out.frames) == 60
    assert (out.width, out.height) == (64, 48)
    assert out.video_codec == "h264"
    assert out.average_rate == 25
    assert out.audio_codec == "aac"
    assert out.audio_rate == 48000
    assert out.audio_channels == 2
    assert out.video_duration_s == pytest.approx(60 / 25)
    assert abs(out.audio_duration_s - out.video_duration_s) <= 1 / 25
    assert abs(out.audio.shape[1] - 60 * 48000 / 25) <= 48000 / 25
    errors = [np.abs(frame.astype(int) - colour(i)).mean() for i, frame in enumerate(out.frames)]
    assert max(errors) < 6, f"colour error per frame: {errors}"
    assert not out.has_b_frames
    assert out.decode_order_is_display_order
    assert out.keyframes == [0, 25, 50]


def test_audio_is_the_tone(tmp_path: Path) -> None:
    path = tmp_path / "tone.mp4"
    write(path, make_chunks(SIZES))
    audio = decode(path).audio
    expected = tone(0, audio.shape[1], 48000, 1)[0]
    # skip the first AAC frame, where the encoder is still settling
    assert np.corrcoef(audio[0, 1024:], expected[1024:])[0, 1] > 0.95


def test_mono_audio_is_duplicated_to_stereo(tmp_path: Path) -> None:
    path = tmp_path / "mono_in.mp4"
    write(path, make_chunks([25], channels=1))
    audio = decode(path).audio
    assert audio.shape[0] == 2
    np.testing.assert_allclose(audio[0], audio[1], atol=1e-3)


def test_stereo_audio_is_mixed_down_for_mono_output(tmp_path: Path) -> None:
    path = tmp_path / "mono_out.mp4"
    write(path, make_chunks([25]), EncoderSettings(width=64, height=48, fps=25, audio_channels=1))
    assert decode(path).audio_channels == 1


def test_keyframe_interval_follows_settings(tmp_path: Path) -> None:
    path = tmp_path / "gop.mp4"
    settings = EncoderSettings(width=64, height=48, fps=10, keyframe_interval_s=0.5)
    write(path, make_chunks([12, 11], fps=10), settings)
    assert decode(path).keyframes == [0, 5, 10, 15, 20]


def test_finalized_when_body_raises(tmp_path: Path) -> None:
    path = tmp_path / "failed.mp4"
    with pytest.raises(RuntimeError, match="inference blew up"), Mp4Writer(path, SETTINGS) as writer:
        for chunk in make_chunks([10, 10]):
            writer.write(chunk)
        raise RuntimeError("inference blew up")
    assert len(decode(path).frames) == 20


def test_close_is_idempotent_and_empty_file_is_valid(tmp_path: Path) -> None:
    path = tmp_path / "empty.mp4"
    writer = Mp4Writer(path, SETTINGS)
    writer.close()
    writer.close()
    with pytest.raises(RuntimeError, match="closed"):
        writer.write(make_chunks([1])[0])


def test_parent_directory_is_created(tmp_path: Path) -> None:
    path = tmp_path / "new" / "deeper" / "out.mp4"
    write(path, make_chunks([5]))
    assert len(decode(path).frames) == 5


def unwritable(path: Path, reason: str) -> str:
    return re.escape(f"cannot write output {path}: {reason}; choose a writable path with --out")


def test_parent_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("")
    path = tmp_path / "taken" / "out.mp4"
    with pytest.raises(PublishError, match=unwritable(path, "a part of its folder path is a file, not a folder")):
        Mp4Writer(path, SETTINGS)


def test_path_is_a_directory(tmp_path: Path) -> None:
    with pytest.raises(PublishError, match=unwritable(tmp_path, "Is a directory")):
        Mp4Writer(tmp_path, SETTINGS)


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
def test_permission_denied(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    path = locked / "out.mp4"
    with pytest.raises(PublishError, match=unwritable(path, "Permission denied")):
        Mp4Writer(path, SETTINGS)


def test_wrong_frame_shape(tmp_path: Path) -> None:
    chunk = make_chunks([3], width=32, height=48)[0]
    with Mp4Writer(tmp_path / "shape.mp4", SETTINGS) as writer, pytest.raises(ValueError, match=re.escape("frames must be uint8 RGB [T, 48, 64, 3]")):
        writer.write(chunk)


def test_chunks_must_be_consecutive(tmp_path: Path) -> None:
    first, _, third = make_chunks([5, 5, 5])
    with Mp4Writer(tmp_path / "gap.mp4", SETTINGS) as writer:
        writer.write(first)
        with pytest.raises(ValueError, match="chunk starts at frame 10 but 5 frames were written"):
            writer.write(third)
