"""The chunk loop never waits for the whole device, and its threads hand work over with events, for both families.

A spy takes the place of the device operations (the seam every device call of
the loop and the policies goes through): it hands out streams and events as
tokens, remembers which stream each thread is on, and counts the syncs. On a
GPU these calls are CUDA streams, events and ``torch.cuda.synchronize``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import torch
from helpers import RATE, speech

from avatarstream.families.assemble import build_pipeline
from avatarstream.families.base import Family
from avatarstream.families.infinitetalk.layout import WeightsLayout
from avatarstream.families.registry import load_family
from avatarstream.pipeline.observer import ChunkDone, RunObserver
from avatarstream.runtime import residency
from avatarstream.runtime.device_ops import DeviceOps
from avatarstream.sources.pcm import PcmBlock

MAIN = "main"


class _Current(threading.local):
    stream: str = MAIN


class SpyOps(DeviceOps):
    """CPU ops whose streams are names and events are (number, stream it was recorded on); syncs and waits are logged."""

    def __init__(self, device: torch.device) -> None:
        self._current = _Current()
        self._streams = 0
        self.events = 0
        self.waits: list[tuple[str, str]] = []  # (stream that waits, stream the event was recorded on)
        self.frames_read_on: list[str] = []
        super().__init__(device)

    def new_stream(self) -> str:
        self._streams += 1
        return f"stream-{self._streams}"

    def on_stream(self, stream: Any) -> Any:
        spy = self

        class _On:
            def __enter__(self) -> None:
                self.before, spy._current.stream = spy._current.stream, stream

            def __exit__(self, *_: object) -> None:
                spy._current.stream = self.before

        return _On()

    def compute_event(self) -> tuple[int, str]:
        with self._count_lock:
            self.events += 1
            return self.events, self._current.stream

    def wait(self, event: Any) -> None:
        assert event is not None, "a hand-over waits for a recorded event"
        self.waits.append((self._current.stream, event[1]))

    def to_host(self, value: torch.Tensor | np.ndarray) -> np.ndarray:
        self.frames_read_on.append(self._current.stream)
        return super().to_host(value)


class SyncsPerChunk(RunObserver):
    def __init__(self, ops: SpyOps) -> None:
        self.ops = ops
        self.device_syncs: list[int] = []

    def on_chunk(self, done: ChunkDone) -> None:
        self.device_syncs.append(self.ops.device_syncs - sum(self.device_syncs))


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[SpyOps]]:
    made: list[SpyOps] = []

    def ops(device: torch.device) -> SpyOps:
        made.append(SpyOps(device))
        return made[-1]

    monkeypatch.setattr(residency, "device_ops", ops)
    yield made


def _blocks(seconds: float) -> Iterator[PcmBlock]:
    samples = speech(seconds)
    for start in range(0, samples.shape[-1], RATE // 5):
        yield PcmBlock(samples[:, start : start + RATE // 5], RATE)


def _run(family: Family, options: dict[str, Any], overlap: bool, ops: list[SpyOps], seconds: float) -> tuple[SyncsPerChunk, SpyOps, int, bool]:
    """A run of ``seconds`` of speech (overlap: asked for, with read-ahead); its syncs per chunk, stretches, and whether it overlapped."""
    pipeline = build_pipeline(family, torch.device("cpu"), options, overlap=overlap, read_ahead=overlap)
    watch = SyncsPerChunk(ops[-1])
    stretches = sum(1 for _ in pipeline.stream(_blocks(seconds), family.reference(None, options), observers=[watch]))
    return watch, ops[-1], stretches, pipeline.overlap


def _check(watch: SyncsPerChunk, ops: SpyOps, stretches: int, overlap: bool) -> None:
    assert len(watch.device_syncs) >= 4, "a few chunks past the first"
    assert watch.device_syncs[1:] == [0] * (len(watch.device_syncs) - 1), f"device-wide syncs per chunk: {watch.device_syncs}"
    assert ops.device_syncs == 0
    assert ops.host_syncs == len(ops.frames_read_on) == stretches, "the host reads each stretch's frames once, through the seam, and nothing else"
    if not overlap:
        assert set(ops.frames_read_on) == {MAIN}
        return
    final = set(ops.frames_read_on)
    assert len(final) == 1 and MAIN not in final, "the final stages run on the worker's own stream"
    (final_stream,) = final
    assert ops.waits.count((final_stream, MAIN)) >= stretches, "each stretch's stream waits for what the loop queued before it"
    assert ops.waits.count((MAIN, final_stream)) >= stretches, "the loop takes each stretch behind its event"
    ahead = {made for waits, made in ops.waits if waits == MAIN and made not in (MAIN, final_stream)}
    assert len(ahead) == 1, "chunks read ahead on a third stream are handed to the loop behind an event"


@pytest.mark.parametrize("overlap", [False, True], ids=["inline", "overlap"])
def test_demo_loop_has_no_device_wide_sync(spy: list[SpyOps], overlap: bool) -> None:
    watch, ops, stretches, overlapped = _run(load_family("demo-tiny"), {"chunk_frames": 6, "interp_frames": 2}, overlap, spy, 2.0)
    assert overlapped == overlap
    _check(watch, ops, stretches, overlapped)


@pytest.mark.parametrize("overlap", [False, True], ids=["inline", "overlap-asked"])
def test_infinitetalk_loop_has_no_device_wide_sync(spy: list[SpyOps], tiny_original: WeightsLayout, overlap: bool) -> None:
    """InfiniteTalk's VAE serves both phases (motion re-encode, I-chunk conditions, decode): overlap asked for runs inline."""
    family = load_family("infinitetalk", tiny_original.base.parent)
    watch, ops, stretches, overlapped = _run(family, {"preset": "flashtalk", "size": (32, 32), "steps": 1}, overlap, spy, 4.0)
    assert not overlapped
    _check(watch, ops, stretches, overlapped)
