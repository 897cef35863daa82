"""Shared pieces of the runtime tests: a demo-tiny family with several transformer blocks, audio, a reference."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Sequence

import numpy as np
import torch

from avatarstream.families.assemble import build_pipeline
from avatarstream.families.demo import DemoFamily
from avatarstream.families.registry import load_family
from avatarstream.models.demo import A2VDiT, DemoConfig, SRDiT
from avatarstream.pipeline.observer import RunObserver
from avatarstream.pipeline.pipeline import Pipeline
from avatarstream.publish.media import MediaChunk
from avatarstream.runtime.device_ops import DeviceOps
from avatarstream.runtime.module import Module
from avatarstream.runtime.parallel.groups import ParallelGroups
from avatarstream.sources.pcm import PcmBlock

RATE = 16000
A2V_LAYERS = 5
SR_LAYERS = 3
REFERENCE = np.full((64, 64, 3), 128, dtype=np.uint8)


def deep_config() -> DemoConfig:
    """demo-tiny with enough blocks to stream (the stock tiny DiTs have one block each)."""
    cfg = DemoConfig.tiny()
    return dataclasses.replace(cfg, dit=dataclasses.replace(cfg.dit, layers=A2V_LAYERS), sr=dataclasses.replace(cfg.sr, layers=SR_LAYERS))


def deep_family() -> DemoFamily:
    family = load_family("demo-tiny")
    family.config = cfg = deep_config()
    family.modules["a2v_dit"] = Module.build("a2v_dit", lambda: A2VDiT(cfg), seed=11)
    family.modules["sr_dit"] = Module.build("sr_dit", lambda: SRDiT(cfg), seed=12)
    return family


def speech(seconds: float) -> np.ndarray:
    t = np.arange(round(seconds * RATE)) / RATE
    return (0.5 * np.sin(2 * math.pi * 220 * t) * (0.5 + 0.5 * np.sin(2 * math.pi * 3 * t))).astype(np.float32)[None]


def deep_pipeline(
    residency: dict[str, str] | None = None, family: DemoFamily | None = None, *, overlap: bool = False, parallel: ParallelGroups | None = None
) -> Pipeline:
    return build_pipeline(
        family or deep_family(), torch.device("cpu"), {"chunk_frames": 6, "interp_frames": 2}, residency=residency, overlap=overlap, parallel=parallel
    )


def request(pipeline: Pipeline, observers: Sequence[RunObserver] = (), seconds: float = 1.5) -> Iterator[MediaChunk]:
    """A short request: long enough for N- and I-chunks."""
    return pipeline.stream([PcmBlock(speech(seconds), RATE)], REFERENCE, seed=1, observers=observers)


def render(pipeline: Pipeline, observers: Sequence[RunObserver] = ()) -> np.ndarray:
    """All frames of ``request``, after ``prepare()``."""
    pipeline.prepare()
    return np.concatenate([c.frames for c in request(pipeline, observers)])


def on_host(tensors: Sequence[torch.Tensor], host: torch.Tensor) -> bool:
    """Whether every tensor lives in ``host``'s storage."""
    return all(t.untyped_storage().data_ptr() == host.untyped_storage().data_ptr() for t in tensors)


def dit_cases() -> dict[str, tuple[Module, tuple[torch.Tensor, ...]]]:
    """The demo family's A2V DiT and SR DiT with fixed random weights, each with fixed inputs."""
    cfg = deep_config()
    g = torch.Generator().manual_seed(0)
    c, frames, size = cfg.vae.latent_channels, 3, cfg.base_latent_size
    tokens = (size // cfg.dit.patch_size) ** 2
    a2v_inputs = (
        torch.randn(1, c, frames, size, size, generator=g),
        torch.randn(1, c, frames, size, size, generator=g),
        torch.tensor([[1.0, 0.0, 0.0]]),
        torch.tensor([0.7]),
        torch.randn(1, frames, cfg.audio.tokens_per_frame, cfg.audio.dim, generator=g),
        torch.randn(1, 5, cfg.text.dim, generator=g),
        torch.randn(1, cfg.reference.global_tokens + tokens, cfg.dit.dim, generator=g),
    )
    sr_inputs = (
        torch.randn(1, c, frames, size, size, generator=g),
        torch.randn(1, c, 2 * size, 2 * size, generator=g),
        torch.randn(1, c, frames, 2 * size, 2 * size, generator=g),
    )
    return {
        "a2v_dit": (Module.build("a2v_dit", lambda: A2VDiT(cfg), seed=5), a2v_inputs),
        "sr_dit": (Module.build("sr_dit", lambda: SRDiT(cfg), seed=6), sr_inputs),
    }


class EventLog(DeviceOps):
    """CPU ops that hand out numbered events and log copies and waits, to check the order the policies ask for."""

    def __init__(self) -> None:
        super().__init__(torch.device("cpu"))
        self.events = 0
        self.log: list[tuple[str, int, int]] = []  # (what, event, slot storage)

    def _event(self) -> int:
        self.events += 1
        return self.events

    def new_stream(self) -> object:
        return object()

    def copy_in(self, dst: torch.Tensor, src: torch.Tensor, stream: object) -> int:
        super().copy_in(dst, src, stream)
        event = self._event()
        self.log.append(("copied", event, dst.untyped_storage().data_ptr()))
        return event

    def wait(self, event: int | None) -> None:
        self.log.append(("compute waits", event or 0, 0))

    def stream_wait(self, stream: object, event: int | None) -> None:
        self.log.append(("copy waits", event or 0, 0))

    def compute_event(self) -> int:
        event = self._event()
        self.log.append(("computed", event, 0))
        return event
