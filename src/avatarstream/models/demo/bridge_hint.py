"""The blend of two anchors, as a per-token hint for the frames an I-chunk generates between them.

The DiT sees each frame's conditioning latent in the same token as its noisy
latent. Left at zero between two anchors, the only way for a generated frame
to meet them is to find them through attention, which a small model does
imprecisely: I-chunks jumped at their anchors by about 2.7x the change
between their own frames. Giving each frame between two given frames their
distance-weighted blend makes meeting the anchors a small per-token residual
(`preconditioning.py`).

Frames with given frames on one side only (the frames an N-chunk generates
after its motion frames) get no hint: a held copy of the last motion frame
as hint was measured to make long sessions drift, since the network learns
to keep whatever error that frame carries.
"""

from __future__ import annotations

import torch
from torch import Tensor


def _given_around(mask: Tensor) -> tuple[Tensor, Tensor]:
    """Per frame, the index of the nearest given frame at or before it (-1: none) and at or after it (T: none)."""
    frames = mask.shape[1]
    index = torch.arange(frames, device=mask.device).expand_as(mask)
    given = mask > 0.5
    before = torch.where(given, index, -1).cummax(dim=1).values
    after = torch.where(given, index, frames).flip(1).cummin(dim=1).values.flip(1)
    return before, after


def bridged_frames(mask: Tensor) -> Tensor:
    """[B, T] bool: generated frames with a given frame on both sides (mask [B, T], 1 = given)."""
    return _bridged(mask, *_given_around(mask))


def _bridged(mask: Tensor, before: Tensor, after: Tensor) -> Tensor:
    return (before >= 0) & (after < mask.shape[1]) & (mask <= 0.5)


def bridge_hint(cond: Tensor, mask: Tensor) -> Tensor:
    """cond [B, C, T, h, w] (given where mask [B, T] is 1) -> the same with bridged frames filled.

    A generated frame between two given frames gets their blend weighted by distance; given frames keep
    their conditioning; any other frame is zero.
    """
    b, c, frames, h, w = cond.shape
    before, after = _given_around(mask)
    index = torch.arange(frames, device=cond.device).expand(b, frames)
    weight_after = ((index - before).clamp(min=0) / (after - before).clamp(min=1)).to(cond.dtype)

    def frames_at(positions: Tensor) -> Tensor:
        return cond.gather(2, positions.clamp(0, frames - 1)[:, None, :, None, None].expand(b, c, frames, h, w))

    blend = frames_at(before) * (1 - weight_after)[:, None, :, None, None] + frames_at(after) * weight_after[:, None, :, None, None]
    given = (mask > 0.5).to(cond.dtype)[:, None, :, None, None]
    return torch.where(_bridged(mask, before, after)[:, None, :, None, None], blend, cond * given)
