"""Spatial 3-D convolutions on the CPU through oneDNN, where torch's own kernel choice takes the im2col path.

torch sends a float32 CPU convolution of batch 1 to oneDNN only when batch x
channels x the first spatial size exceeds 20,480 (``ConvParams::use_mkldnn``,
"for some case, native is faster"). That rule was written for images; for a
video the product leaves out height and width, so a video VAE's 3x3x3
convolutions fall back to ``slow_conv3d`` whenever the channels or frames are
few: every layer of a tiny checkpoint, and a real Wan VAE's 96-channel layers
on a 3-frame chunk up to 60 rows. ``slow_conv3d`` unfolds its input into a
fresh column buffer on every call (6.75 MiB per call, 17 calls per
LiveAvatar block at 64x64) and is 3-8x slower than oneDNN on those shapes.
The buffers' churn is also what made a long CPU run's peak RSS wander by
±7 % between runs: glibc keeps them as free heap, laid out differently each
time, while the memory actually in use moves by 2 %.

Only convolutions with a spatial window (height and width both above 1) and
stride 1 are sent; pointwise, temporal-only and patchify convolutions keep
torch's choice, which is the faster one for them (measured in
docs/runtime.md). Anything but a float32 CPU tensor without gradients also
keeps torch's path, so a network moved to a GPU is unaffected.
"""

from __future__ import annotations

import weakref

import torch
from torch import nn

_routed: weakref.WeakSet[nn.Conv3d] = weakref.WeakSet()  # convolutions whose forward already goes through oneDNN


def _takes_onednn(conv: nn.Conv3d) -> bool:
    """A 3x3-in-space, stride-1 convolution with explicit zero padding: the shape oneDNN wins on."""
    height, width = conv.kernel_size[-2], conv.kernel_size[-1]
    return height > 1 and width > 1 and conv.stride == (1, 1, 1) and conv.padding_mode == "zeros" and not isinstance(conv.padding, str)


def _onednn_forward(conv: nn.Conv3d) -> None:
    torch_forward = conv._conv_forward  # the bound method of nn.Conv3d, used for everything oneDNN should not take
    padding, stride, dilation = list(conv.padding), list(conv.stride), list(conv.dilation)

    def forward(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        cpu_float = input.device.type == "cpu" and input.dtype == torch.float32 and weight.dtype == torch.float32
        if not cpu_float or not torch.backends.mkldnn.enabled or (torch.is_grad_enabled() and (input.requires_grad or weight.requires_grad)):
            return torch_forward(input, weight, bias)
        return torch.mkldnn_convolution(input, weight, bias, padding, stride, dilation, conv.groups)

    conv._conv_forward = forward  # type: ignore[method-assign]  # an instance attribute: nn.Conv3d.forward calls self._conv_forward


def onednn_convolutions(network: nn.Module) -> int:
    """Send ``network``'s spatial 3-D convolutions to oneDNN on the CPU (once per convolution); how many are sent."""
    if not torch.backends.mkldnn.is_available():
        return 0
    sent = 0
    for conv in network.modules():
        if isinstance(conv, nn.Conv3d) and _takes_onednn(conv):
            if conv not in _routed:
                _onednn_forward(conv)
                _routed.add(conv)
            sent += 1
    return sent
