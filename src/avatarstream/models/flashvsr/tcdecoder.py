"""FlashVSR's TCDecoder: a TAEHV-style decoder conditioned on the LQ frames, decoded latent frame by latent frame.

Its input per latent frame is the four LQ frames that frame covers,
pixel-unshuffled by (4, 8, 8) to 768 channels, in front of the 16 latent
channels. Then tanh(x/3)*3, a conv, three stages of 3 MemBlocks (each sees
its own input of the previous output frame: ``DecoderMemory``, owned by the
caller, zero at the start), nearest x2 upsampling and a TGrow (time x1, x2,
x2), and a last conv to RGB; an identity-initialised 3x3 conv + ReLU follows
each top-level ReLU. The first latent frame's first 3 output frames are
dropped, so latent frame 0 gives 1 frame and every later one 4; decoding in
any split gives the frames of decoding whole. Module indices are the
checkpoint's (``decoder.N``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from avatarstream.models.flashvsr.config import TCDecoderConfig

#: Output frames the first latent frame gives that the reference drops (2**2 - 1: two time upsamplings).
TRIMMED_FRAMES = 3


class Clamp(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x / 3) * 3


def conv(n_in: int, n_out: int, *, bias: bool = True) -> nn.Conv2d:
    return nn.Conv2d(n_in, n_out, 3, padding=1, bias=bias)


def identity_conv(channels: int) -> nn.Conv2d:
    """A 3x3 conv initialised to the identity (Dirac), as the reference builds the deepening layers."""
    layer = conv(channels, channels, bias=False)
    with torch.no_grad():
        nn.init.dirac_(layer.weight)
    return layer


class MemBlock(nn.Module):
    def __init__(self, n_in: int, n_out: int) -> None:
        super().__init__()
        self.conv = nn.Sequential(conv(n_in * 2, n_out), nn.ReLU(), conv(n_out, n_out), nn.ReLU(), conv(n_out, n_out))
        self.skip = nn.Conv2d(n_in, n_out, 1, bias=False) if n_in != n_out else nn.Identity()

    def forward(self, x: torch.Tensor, past: torch.Tensor) -> torch.Tensor:
        return F.relu(self.conv(torch.cat([x, past], 1)) + self.skip(x))


class TGrow(nn.Module):
    """One frame in, ``stride`` frames out (the conv's channel groups, in time order)."""

    def __init__(self, channels: int, stride: int) -> None:
        super().__init__()
        self.stride = stride
        self.conv = nn.Conv2d(channels, channels * stride, 1, bias=False)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        return list(self.conv(x).chunk(self.stride, dim=1))


class Upsample(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.interpolate(x, scale_factor=2.0, mode="nearest")


#: Indices of the identity-initialised convs in ``decoder`` (the layers a checkpoint may leave out: they keep their Dirac start).
IDENTITY_CONVS = (3, 24)


@dataclass
class DecoderMemory:
    """One session's decoder state: each MemBlock's input of the previous frame, and how many latent frames were decoded."""

    inputs: dict[int, torch.Tensor] = field(default_factory=dict)
    latent_frames: int = 0

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.inputs.values())


class TCDecoder(nn.Module):
    def __init__(self, config: TCDecoderConfig) -> None:
        super().__init__()
        self.config = config
        c = config.channels
        self.decoder = nn.Sequential(
            Clamp(), conv(config.input_channels, c[0]), nn.ReLU(), identity_conv(c[0]), nn.ReLU(),
            MemBlock(c[0], c[0]), MemBlock(c[0], c[0]), MemBlock(c[0], c[0]), Upsample(), TGrow(c[0], 1), conv(c[0], c[1], bias=False),
            MemBlock(c[1], c[1]), MemBlock(c[1], c[1]), MemBlock(c[1], c[1]), Upsample(), TGrow(c[1], 2), conv(c[1], c[2], bias=False),
            MemBlock(c[2], c[2]), MemBlock(c[2], c[2]), MemBlock(c[2], c[2]), Upsample(), TGrow(c[2], 2), conv(c[2], c[3], bias=False),
            nn.ReLU(), identity_conv(c[3]), nn.ReLU(), conv(c[3], config.image_channels),
        )  # fmt: skip

    def unshuffle(self, cond: torch.Tensor) -> torch.Tensor:
        """LQ frames [1, 3, 4T, H, W] -> [1, 768, T, H/8, W/8] (time, rows, columns folded into channels)."""
        ff, hh, ww = self.config.cond_shuffle
        b, c, f, h, w = cond.shape
        x = cond.view(b, c, f // ff, ff, h // hh, hh, w // ww, ww).permute(0, 1, 3, 5, 7, 2, 4, 6)
        return x.reshape(b, c * ff * hh * ww, f // ff, h // hh, w // ww)

    def decode(self, latents: torch.Tensor, cond: torch.Tensor, memory: DecoderMemory) -> torch.Tensor:
        """Latents [1, 16, T, h, w] and their LQ frames [1, 3, 4T, 8h, 8w] in [-1, 1] -> frames [1, 3, F, 8h, 8w] in [-1, 1].

        ``cond`` holds 4 frames per latent frame (frames 4j-3 .. 4j for latent frame j; frame 0 stands for the negative ones).
        """
        x = torch.cat([self.unshuffle(cond), latents], dim=1)
        frames: list[torch.Tensor] = []
        for t in range(x.shape[2]):
            out: list[torch.Tensor] = []
            self._run(x[:, :, t], 0, memory, out)
            frames += out[TRIMMED_FRAMES:] if memory.latent_frames == 0 else out
            memory.latent_frames += 1
        return torch.stack(frames, dim=2) * 2 - 1

    def _run(self, x: torch.Tensor, first: int, memory: DecoderMemory, out: list[torch.Tensor]) -> None:
        """Layers ``first``.. on one frame, depth first (a TGrow's frames in time order), appending output frames to ``out``."""
        for i in range(first, len(self.decoder)):
            layer = self.decoder[i]
            if isinstance(layer, MemBlock):
                past = memory.inputs.get(i)
                memory.inputs[i] = x
                x = layer(x, torch.zeros_like(x) if past is None else past)
            elif isinstance(layer, TGrow):
                for frame in layer(x):
                    self._run(frame, i + 1, memory, out)
                return
            else:
                x = layer(x)
        out.append(x)
