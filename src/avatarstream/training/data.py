"""Training data made on the fly: random frames for the VAE, talking clips for A2V and SR.

Everything is a pure function of a seed, so a run is reproducible and any
sample can be regenerated instead of stored. Rendering runs in DataLoader
worker processes, overlapping with training on the other core.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

from avatarstream.avatars import Identity, MouthTrack, Pose, mouth_track, reference_image, render_clip, render_frame
from avatarstream.avatars.identity import HELD_OUT_IDENTITIES
from avatarstream.avatars.speech import SAMPLE_RATE, speech_track


def to_tensor(frames: np.ndarray) -> torch.Tensor:
    """uint8 [..., H, W, 3] -> float [..., 3, H, W] in [-1, 1]."""
    return torch.from_numpy(np.ascontiguousarray(frames)).movedim(-1, -3).float() / 127.5 - 1.0


def downsample(video: torch.Tensor, size: int) -> torch.Tensor:
    """[N, 3, H, W] -> [N, 3, size, size] by area averaging, exactly as the reference stage does."""
    return F.interpolate(video, size=(size, size), mode="area")


def random_pose_sequence(rng: np.random.Generator, frames: int) -> list[Pose]:
    """A few consecutive frames of plausible motion: a random pose drifting slowly, mouth moving."""
    dx, dy, angle = rng.uniform(-6, 6), rng.uniform(-4.5, 4.5), rng.uniform(-0.08, 0.08)
    openness = rng.choice([0.0, rng.uniform(0, 1)])
    width, blink = rng.uniform(-1, 1), rng.choice([0.0, 0.0, rng.uniform(0, 1)])
    poses = []
    for _ in range(frames):
        poses.append(Pose(dx, dy, angle, float(openness), width, blink))
        dx, dy, angle = dx + rng.normal(0, 0.3), dy + rng.normal(0, 0.2), angle + rng.normal(0, 0.004)
        openness = float(np.clip(openness + rng.normal(0, 0.2), 0, 1))
    return poses


class FrameSequences(IterableDataset):
    """Endless short frame sequences of random training identities: uint8 [T, 256, 256, 3]."""

    def __init__(self, seed: int, frames: int) -> None:
        self.seed = seed
        self.frames = frames

    def __iter__(self) -> Iterator[np.ndarray]:
        info = get_worker_info()
        worker, workers = (info.id, info.num_workers) if info else (0, 1)
        index = worker
        while True:
            rng = np.random.default_rng([self.seed, index])
            identity = Identity.from_seed(int(rng.integers(HELD_OUT_IDENTITIES)))
            yield np.stack([render_frame(identity, pose) for pose in random_pose_sequence(rng, self.frames)])
            index += workers


def frame_batches(seed: int, frames: int, batch: int, workers: int = 1) -> Iterator[torch.Tensor]:
    """Batches [B, T, 3, 256, 256] in [-1, 1], rendered by `workers` background processes."""
    loader = DataLoader(
        FrameSequences(seed, frames), batch_size=batch, num_workers=workers, collate_fn=lambda items: to_tensor(np.stack(items)), persistent_workers=workers > 0
    )
    return iter(loader)


@dataclass(frozen=True)
class ClipSpec:
    """What a clip is made of: an identity, a motion and an audio seed, and its split of sentences."""

    identity_seed: int
    motion_seed: int
    audio_seed: int
    seconds: float
    split: str = "train"

    @classmethod
    def training(cls, seed: int, index: int, seconds: float) -> ClipSpec:
        rng = np.random.default_rng([seed, 0xC1, index])
        return cls(int(rng.integers(HELD_OUT_IDENTITIES)), int(rng.integers(1 << 30)), int(rng.integers(1 << 30)), seconds)


@dataclass
class Clip:
    """A rendered talking clip with its ground truth."""

    spec: ClipSpec
    audio: np.ndarray  # float32 [S] at 16 kHz
    mouth: MouthTrack
    frames: np.ndarray  # uint8 [T, 256, 256, 3]
    reference: np.ndarray  # uint8 [256, 256, 3]


def make_clip(spec: ClipSpec, fps: int = 25) -> Clip:
    audio = speech_track(spec.seconds, spec.audio_seed, spec.split)
    mouth = mouth_track(audio, SAMPLE_RATE, fps)
    identity = Identity.from_seed(spec.identity_seed)
    frames = render_clip(identity, mouth, spec.motion_seed, fps=fps)
    return Clip(spec, audio, mouth, frames, reference_image(identity))


class Clips(IterableDataset):
    """The clips of a list of specs, split across workers, in order within a worker."""

    def __init__(self, specs: list[ClipSpec]) -> None:
        self.specs = specs

    def __iter__(self) -> Iterator[Clip]:
        info = get_worker_info()
        worker, workers = (info.id, info.num_workers) if info else (0, 1)
        for spec in self.specs[worker::workers]:
            yield make_clip(spec)


def render_clips(specs: list[ClipSpec], workers: int = 1) -> Iterator[Clip]:
    """Clips rendered in background processes (order across workers is interleaved)."""
    return iter(DataLoader(Clips(specs), batch_size=None, num_workers=workers))
