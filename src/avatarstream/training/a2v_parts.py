"""What the A2V trainer (`a2v.py`) and its rollouts (`rollout.py`) share: the modules trained together and the chunk geometry."""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from avatarstream.models.demo import A2VDiT, AudioEncoder, ReferenceEncoder


@dataclass(frozen=True)
class ChunkGeometry:
    chunk_frames: int = 12
    interp_frames: int = 3
    motion_frames: int = 2
    first_chunk_share: float = 0.15
    cond_noise: float = 0.2
    """Motion frames get Gaussian noise of std U(0, cond_noise): inference feeds back generated latents."""
    anchor_noise: float = 0.03
    """The same for I-chunk anchors, kept below the spread of the frames between them around their blend (0.1):
    anchors are never fed back, and the DiT predicts that small residual (`bridge_hint.py`)."""


class A2VModels(nn.Module):
    """The modules trained together (one optimiser, one EMA)."""

    def __init__(self, dit: A2VDiT, audio_encoder: AudioEncoder, reference_encoder: ReferenceEncoder) -> None:
        super().__init__()
        self.dit = dit
        self.audio_encoder = audio_encoder
        self.reference_encoder = reference_encoder
