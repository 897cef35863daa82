"""The Wan VAE's timeline: its first latent frame is one video frame, every later one four (the causal VAE's stride)."""

from __future__ import annotations

from avatarstream.components.wan.config import VAE_TEMPORAL_STRIDE
from avatarstream.pipeline.chunks import FrameLayout

#: Latent (timeline) frames to video frames for every Wan-based family.
FRAMES = FrameLayout(stride=VAE_TEMPORAL_STRIDE, first=1)
