"""``avatarstream.render``: the one-call Python API the CLI is a shell over."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import av
import httpx
import numpy as np
import pytest

import avatarstream
from avatarstream import Outputs, load_family
from avatarstream.benchmarks.local_server import free_port
from avatarstream.errors import InputError
from avatarstream.sources.bundled import DEFAULT_REFERENCE
from avatarstream.sources.pcm import PcmBlock

FAST = {"model": "demo-tiny", "model_options": {"chunk_frames": 6, "interp_frames": 2}, "threads": 1, "preset": "ultrafast"}
RATE = 16000


def tone(seconds: float) -> np.ndarray:
    t = np.arange(round(seconds * RATE)) / RATE
    return (0.4 * np.sin(2 * np.pi * 220 * t) * (0.5 + 0.5 * np.sin(2 * np.pi * 3 * t))).astype(np.float32)


def blocks(seconds: float, fail_after_s: float | None = None) -> Iterator[PcmBlock]:
    """A live source: 0.2 s blocks, optionally failing part-way."""
    samples = tone(seconds)
    step = RATE // 5
    for offset in range(0, samples.size, step):
        if fail_after_s is not None and offset >= fail_after_s * RATE:
            raise RuntimeError("the microphone went away")
        yield PcmBlock(samples[None, offset : offset + step], RATE)


def frames(path: Path) -> np.ndarray:
    with av.open(str(path)) as container:
        return np.stack([f.to_ndarray(format="rgb24") for f in container.decode(video=0)])


def test_render_writes_an_mp4_and_returns_the_report(tmp_path: Path) -> None:
    result = avatarstream.render(blocks(1.0), out=tmp_path / "a.mp4", report=tmp_path / "r.json", **FAST)
    assert result.complete and result.preview is None
    assert result.report["frames"] == 25 and result.report["realtime_factor"] > 0
    assert result.report["cpu"]["threads"] == 1 and result.report["cpu"]["follows_machine"] is None  # FAST chose one thread
    assert len(frames(tmp_path / "a.mp4")) == 25 and (tmp_path / "r.json").is_file()


def test_outputs_and_a_loaded_family_rendered_twice(tmp_path: Path) -> None:
    family = load_family("demo-tiny")
    options = {k: v for k, v in FAST.items() if k != "model"}
    first = avatarstream.render(blocks(1.0), out=Outputs(file=tmp_path / "a.mp4", hls=tmp_path / "hls"), model=family, **options)
    avatarstream.render(blocks(1.0), out=tmp_path / "b.mp4", model=family, **options)
    assert [r.name for r in first.outputs][1].startswith("hls") and (tmp_path / "hls" / "index.m3u8").is_file()
    assert np.array_equal(frames(tmp_path / "a.mp4"), frames(tmp_path / "b.mp4")), "same family, audio and seed: the same video"
    with pytest.raises(InputError, match="pass them to load_family"):
        avatarstream.render(blocks(1.0), out=tmp_path / "c.mp4", model=family, weights=tmp_path)


def test_avatar_seed_changes_the_reference(tmp_path: Path) -> None:
    family = load_family("demo")
    assert not np.array_equal(family.reference(None, {"avatar": 3}), family.reference(None))
    shutil.copy(DEFAULT_REFERENCE, tmp_path / "face.png")  # a real image: the check of the pair comes after the file's
    with pytest.raises(InputError, match="either --reference IMAGE or --avatar SEED"):
        avatarstream.render(blocks(1.0), tmp_path / "face.png", out=tmp_path / "x.mp4", **{**FAST, "model_options": {"avatar": 3}})
    assert not (tmp_path / "x.mp4").exists()


def test_bad_input_starts_no_output(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="--seed must be 0 or more"):
        avatarstream.render(blocks(1.0), out=tmp_path / "x.mp4", seed=-1, **FAST)
    with pytest.raises(InputError, match="--chunk-frames 1 is too short"):
        avatarstream.render(blocks(1.0), out=tmp_path / "x.mp4", **{**FAST, "model_options": {"chunk_frames": 1}})
    assert not (tmp_path / "x.mp4").exists()


def test_a_source_that_fails_leaves_a_playable_file(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="microphone went away"):
        avatarstream.render(blocks(5.0, fail_after_s=2.0), out=tmp_path / "a.mp4", **FAST)
    assert 0 < len(frames(tmp_path / "a.mp4")) <= 50


def test_kept_preview_serves_the_finished_stream_until_stopped(tmp_path: Path) -> None:
    port = free_port()
    result = avatarstream.render(blocks(1.0), out=Outputs(preview=f"127.0.0.1:{port}", keep_preview=True), **FAST)
    assert result.preview is not None and result.preview.url == f"http://127.0.0.1:{port}/"
    try:
        assert httpx.get(result.preview.url).status_code == 200
        playlist = httpx.get(result.preview.url + "hls/index.m3u8")
        assert playlist.status_code == 200 and "#EXT-X-ENDLIST" in playlist.text
    finally:
        result.preview.stop()
    with pytest.raises(httpx.ConnectError):
        httpx.get(result.preview.url)
    plain = avatarstream.render(blocks(1.0), out=Outputs(preview=f"127.0.0.1:{port}"), **FAST)
    assert plain.preview is None
    with pytest.raises(httpx.ConnectError):  # without keep_preview the page stops with the render
        httpx.get(f"http://127.0.0.1:{port}/")
