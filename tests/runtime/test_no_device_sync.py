"""In the steady state the chunk loop makes the host wait for nothing but each stretch's frames, for every family, and
its threads hand work over with events, never a device-wide sync.

Two witnesses watch one run. ``SyncCheck`` (``runtime/sync_check.py``), a torch function mode pushed on the loop's
threads, sees every host-synchronizing tensor operation wherever it is called (``.item()``, ``.cpu()``, a tensor in an
``if``, boolean masks, host indices of device tensors ...); only the reads declared in ``runtime/host_reads.py`` pass.
On a CPU it counts what would make the host wait on a GPU (a tensor made without a device is the host's). A spy takes
the place of the device operations (the seam every device call of the loop goes through): it hands out streams and
events as tokens, remembers which stream each thread is on, counts device-wide syncs, and pushes the check on each
worker thread (the finalize and read-ahead threads run their work inside ``on_stream``).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from helpers import RATE, speech

from avatarstream.families.assemble import build_pipeline
from avatarstream.families.infinitetalk.layout import WeightsLayout
from avatarstream.families.registry import load_family
from avatarstream.pipeline.observer import ChunkDone, RunObserver
from avatarstream.pipeline.pipeline import Pipeline
from avatarstream.pipeline.state import StageContext
from avatarstream.runtime import residency
from avatarstream.runtime.device_ops import DeviceOps
from avatarstream.runtime.sync_check import SyncCheck
from avatarstream.sources.pcm import PcmBlock

MAIN = "main"
DEMO = {"chunk_frames": 6, "interp_frames": 2}
INFINITETALK = {"preset": "flashtalk", "size": (32, 32), "steps": 1}
LIVEAVATAR = {"size": (64, 64), "steps": 2, "cache_blocks": 1, "audio_window_s": 1.0, "audio_lookahead": 4}


class _Current(threading.local):
    stream: str = MAIN


class SpyOps(DeviceOps):
    """CPU ops whose streams are names and events are (number, stream it was recorded on); syncs and waits are logged,
    and each worker thread's work runs under the run's ``SyncCheck``."""

    def __init__(self, device: torch.device) -> None:
        self._current = _Current()
        self._streams = 0
        self.events = 0
        self.waits: list[tuple[str, str]] = []  # (stream that waits, stream the event was recorded on)
        self.frames_read_on: list[str] = []
        self.check = SyncCheck(device)
        super().__init__(device)

    def new_stream(self) -> str:
        self._streams += 1
        return f"stream-{self._streams}"

    @contextlib.contextmanager
    def on_stream(self, stream: Any) -> Iterator[None]:
        before, self._current.stream = self._current.stream, stream
        try:
            with self.check.on_thread():
                yield
        finally:
            self._current.stream = before

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


def _pipeline(model: str, weights: Path | None, options: dict[str, Any], overlap: bool) -> tuple[Pipeline, np.ndarray]:
    family = load_family(model, weights)
    return build_pipeline(family, torch.device("cpu"), options, overlap=overlap, read_ahead=overlap), family.reference(None, options)


def _run(pipeline: Pipeline, reference: np.ndarray, ops: SpyOps, seconds: float) -> tuple[SyncsPerChunk, int]:
    """A run of ``seconds`` of speech under the check: its device-wide syncs per chunk and its stretches."""
    watch = SyncsPerChunk(ops)
    with ops.check.around():
        stretches = sum(1 for _ in pipeline.stream(_blocks(seconds), reference, observers=[watch]))
    return watch, stretches


def _check_syncs(check: SyncCheck, stretches: int) -> None:
    assert check.steady and check.allowed["frames"] == stretches - 1 >= 3, "the steady state is a few stretches, each read once"
    assert not check.found, "host syncs in the steady state:\n" + check.report()


def _check_streams(watch: SyncsPerChunk, ops: SpyOps, stretches: int, overlap: bool, reads_ahead: bool) -> None:
    assert len(watch.device_syncs) >= 4, "a few chunks past the first"
    assert watch.device_syncs == [0] * len(watch.device_syncs) and ops.device_syncs == 0, f"device-wide syncs per chunk: {watch.device_syncs}"
    assert ops.host_syncs == len(ops.frames_read_on) == stretches, "the host reads each stretch's frames once, through the seam"
    if not overlap:
        assert set(ops.frames_read_on) == {MAIN}
        return
    final = set(ops.frames_read_on)
    assert len(final) == 1 and MAIN not in final, "the final stages run on the worker's own stream"
    (final_stream,) = final
    assert ops.waits.count((final_stream, MAIN)) >= stretches, "each stretch's stream waits for what the loop queued before it"
    assert ops.waits.count((MAIN, final_stream)) >= stretches, "the loop takes each stretch behind its event"
    ahead = {made for waits, made in ops.waits if waits == MAIN and made not in (MAIN, final_stream)}
    assert len(ahead) == reads_ahead, "chunks read ahead on a third stream are handed to the loop behind an event"


def _check_run(model: str, weights: Path | None, options: dict[str, Any], overlap: bool, spy: list[SpyOps], seconds: float) -> bool:
    """Run under both witnesses; whether the pipeline overlapped."""
    pipeline, reference = _pipeline(model, weights, options, overlap)
    watch, stretches = _run(pipeline, reference, spy[-1], seconds)
    _check_syncs(spy[-1].check, stretches)
    _check_streams(watch, spy[-1], stretches, pipeline.overlap, bool(pipeline.independent))  # stages that can read ahead
    return pipeline.overlap


@pytest.mark.parametrize("overlap", [False, True], ids=["inline", "overlap"])
@pytest.mark.parametrize("model", ["demo-tiny", "demo"])
def test_demo_steady_state_waits_for_frames_only(spy: list[SpyOps], model: str, overlap: bool) -> None:
    assert _check_run(model, None, DEMO if model == "demo-tiny" else {}, overlap, spy, 2.0) == overlap


@pytest.mark.parametrize("overlap", [False, True], ids=["inline", "overlap-asked"])
def test_infinitetalk_steady_state_waits_for_frames_only(spy: list[SpyOps], tiny_original: WeightsLayout, overlap: bool) -> None:
    """InfiniteTalk's VAE serves both phases (motion re-encode, I-chunk conditions, decode): overlap asked for runs inline."""
    assert not _check_run("infinitetalk", tiny_original.base.parent, INFINITETALK, overlap, spy, 4.0)


@pytest.mark.parametrize("overlap", [False, True], ids=["inline", "overlap"])
def test_liveavatar_steady_state_waits_for_frames_only(spy: list[SpyOps], tiny_liveavatar: Path, overlap: bool) -> None:
    assert _check_run("liveavatar", tiny_liveavatar, LIVEAVATAR, overlap, spy, 2.0) == overlap


@pytest.mark.parametrize("overlap", [False, True], ids=["inline", "overlap"])
def test_colourbars_steady_state_waits_for_frames_only(spy: list[SpyOps], overlap: bool) -> None:
    assert _check_run("colourbars", None, {}, overlap, spy, 2.0) == overlap


# -- the check fails a stray sync, and names it --------------------------------------------------------------------

#: op -> (code run on the stage's output in every chunk, the name the check gives it)
STRAY: dict[str, tuple[Callable[[torch.Tensor], object], str]] = {
    "item": (lambda t: t.sum().item(), "Tensor.item"),
    "tolist": (lambda t: t.flatten()[:2].tolist(), "Tensor.tolist"),
    "if": (lambda t: 1 if (t > 0).any() else 0, "Tensor.__bool__"),
    "cpu": (lambda t: t.cpu(), "Tensor.cpu"),
    "np.asarray": (lambda t: np.asarray(t), "Tensor.__array__"),
    "mask": (lambda t: t[t > 0], "Tensor.__getitem__"),
    "host index": (lambda t: t.flatten()[torch.arange(2)], "Tensor.__getitem__"),
}


def _with_stray(pipeline: Pipeline, stage_name: str, write: str, stray: Callable[[torch.Tensor], object]) -> None:
    """The stage named ``stage_name`` becomes a subclass of its own that runs ``stray`` on what it writes."""
    stage = next(s for s in pipeline.stages if s.name == stage_name)
    base = type(stage)

    def run(self: Any, ctx: StageContext) -> None:
        base.run(self, ctx)
        stray(ctx[write])

    stage.__class__ = type("Stray", (base,), {"run": run})


@pytest.mark.parametrize("op", list(STRAY))
@pytest.mark.parametrize(
    ("overlap", "stage", "write"), [(False, "audio_to_video", "latents"), (True, "decode", "frames")], ids=["chunk-stage", "final-stage-on-worker"]
)
def test_a_stray_sync_in_a_stage_fails_the_check_and_is_named(spy: list[SpyOps], op: str, overlap: bool, stage: str, write: str) -> None:
    stray, name = STRAY[op]
    pipeline, reference = _pipeline("demo-tiny", None, DEMO, overlap)
    _with_stray(pipeline, stage, write, stray)
    _, stretches = _run(pipeline, reference, spy[-1], 2.0)
    with pytest.raises(AssertionError, match="host syncs in the steady state"):
        _check_syncs(spy[-1].check, stretches)
    lines = spy[-1].check.report().splitlines()
    assert len(lines) == 1, f"one stray sync, named once: {lines}"
    assert int(lines[0].split(" x ")[0]) >= 3, "once per chunk of the steady state"
    assert f"{name} in stage {stage!r}" in lines[0] and f"{Path(__file__).name}:" in lines[0], lines[0]
    thread = lines[0].split(" on thread ")[1]
    assert thread.startswith("avatarstream-final") if overlap else thread.startswith("MainThread"), lines[0]
