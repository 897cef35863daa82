"""Batch and streaming share one loop: same audio, same frames, however the audio arrives."""

from __future__ import annotations

import asyncio
import contextlib
import math
import threading
from pathlib import Path

import numpy as np
import pytest
import torch

from avatarstream.errors import InputError
from avatarstream.families.assemble import build_pipeline
from avatarstream.families.registry import load_family
from avatarstream.pipeline.pipeline import Pipeline
from avatarstream.runtime.cpu_threads import set_threads
from avatarstream.sources.audio_file import open_audio_file
from avatarstream.sources.pcm import PcmBlock
from sources.sine_files import write_sine

RATE = 16000


@pytest.fixture(scope="module")
def pipeline():
    set_threads(None, follow_machine=False)  # frames compared bit for bit: a thread count that follows the load could change the last bits
    family = load_family("demo-tiny")
    return build_pipeline(family, torch.device("cpu"), {"chunk_frames": 6, "interp_frames": 2})


@pytest.fixture(scope="module")
def reference():
    return np.full((64, 64, 3), 128, dtype=np.uint8)


def speechy(seconds: float) -> np.ndarray:
    """A tone whose loudness rises and falls like syllables."""
    t = np.arange(round(seconds * RATE)) / RATE
    return (0.5 * np.sin(2 * math.pi * 220 * t) * (0.5 + 0.5 * np.sin(2 * math.pi * 3 * t))).astype(np.float32)[None]


def pieces(samples: np.ndarray, seed: int) -> list[PcmBlock]:
    """Split into blocks of random sizes, as a socket would deliver them."""
    rng = np.random.default_rng(seed)
    cuts = np.cumsum(rng.integers(1, 2500, size=samples.shape[1]))
    cuts = cuts[cuts < samples.shape[1]]
    return [PcmBlock(part, RATE) for part in np.split(samples, cuts, axis=1)]


def frames_of(chunks) -> np.ndarray:
    return np.concatenate([c.frames for c in chunks])


def test_streamed_pieces_equal_one_block(pipeline, reference) -> None:
    samples = speechy(2.3)
    whole = list(pipeline.stream([PcmBlock(samples, RATE)], reference, seed=1))
    streamed = list(pipeline.stream(iter(pieces(samples, 0)), reference, seed=1))
    assert sum(c.num_frames for c in whole) == round(2.3 * 25)
    np.testing.assert_array_equal(frames_of(whole), frames_of(streamed))
    np.testing.assert_allclose(np.concatenate([c.audio for c in whole], 1), np.concatenate([c.audio for c in streamed], 1), atol=1e-5)


def test_file_source_equals_array_source(pipeline, reference, tmp_path: Path) -> None:
    path = tmp_path / "a.wav"
    write_sine(path, "pcm_f32le", RATE, 1, 1.1)
    from_file = frames_of(pipeline.stream(open_audio_file(path), reference, seed=2))
    with open_audio_file(path) as source:
        samples = np.concatenate([b.samples for b in source], axis=1)
    from_array = frames_of(pipeline.stream(iter(pieces(samples, 5)), reference, seed=2))
    np.testing.assert_array_equal(from_file, from_array)


def test_frames_come_out_before_the_audio_ends(pipeline, reference) -> None:
    """Live promise: the first chunk is published while most of the audio has not arrived."""
    blocks = pieces(speechy(4.0), 1)
    pulled = 0

    def live():
        nonlocal pulled
        for block in blocks:
            pulled += 1
            yield block

    stream = pipeline.stream(live(), reference)
    first = next(stream)
    assert first.first_frame == 0 and first.num_frames > 0
    assert pulled < len(blocks) / 2
    stream.close()


def test_async_source_gives_the_same_frames(pipeline, reference) -> None:
    samples = speechy(1.5)

    async def source():
        for block in pieces(samples, 3):
            await asyncio.sleep(0)
            yield block

    async def collect():
        return [c async for c in pipeline.astream(source(), reference, seed=4)]

    async_frames = frames_of(asyncio.run(collect()))
    sync_frames = frames_of(pipeline.stream(iter(pieces(samples, 3)), reference, seed=4))
    np.testing.assert_array_equal(async_frames, sync_frames)


def test_async_consumer_can_stop_early(pipeline, reference) -> None:
    async def endless():
        while True:
            await asyncio.sleep(0)
            yield PcmBlock(speechy(0.2), RATE)

    async def first_two():
        got = []
        async with contextlib.aclosing(pipeline.astream(endless(), reference)) as chunks:
            async for chunk in chunks:
                got.append(chunk)
                if len(got) == 2:
                    break
        assert not [t for t in threading.enumerate() if t.name == "avatarstream-loop"], "the loop thread must stop with the consumer"
        return got

    assert len(asyncio.run(asyncio.wait_for(first_two(), 120))) == 2


def test_empty_stream_is_a_clear_error(pipeline, reference) -> None:
    with pytest.raises(InputError, match="too short to make a single frame"):
        list(pipeline.stream(iter([]), reference))


def test_overlapped_execution_gives_identical_frames(reference) -> None:
    family = load_family("demo-tiny")
    samples = speechy(2.0)

    def built(**runtime: bool) -> Pipeline:  # each right before it runs: a pipeline built later takes the modules over
        return build_pipeline(family, torch.device("cpu"), {"chunk_frames": 6, "interp_frames": 2}, **runtime)

    a = list(built(overlap=False).stream(iter(pieces(samples, 7)), reference, seed=9))
    for runtime in ({"overlap": True}, {"overlap": True, "read_ahead": True}):
        other = built(**runtime)
        if runtime.get("read_ahead"):
            assert [s.name for s in other.independent] == ["context_gen"]  # prepared a chunk ahead
        b = list(other.stream(iter(pieces(samples, 7)), reference, seed=9))
        assert [c.first_frame for c in a] == [c.first_frame for c in b]
        np.testing.assert_array_equal(frames_of(a), frames_of(b))
