"""Spatial 3-D convolutions on the CPU through oneDNN, where torch's own kernel choice takes the im2col path.

torch sends a float32 CPU convolution of batch 1 to oneDNN only when batch x
channels x the first spatial size exceeds 20,480 (``ConvParams::use_mkldnn``,
"for some case, native is faster"). That rule was written for images; for a
video the product leaves out height and width, so a video VAE's 3x3x3
convolutions fall back to ``slow_conv3d`` whenever the channels or frames are
few: every layer of a tiny checkpoint, and a real-size video VAE's
96-channel layers on a 3-frame chunk up to 60 rows. ``slow_conv3d`` unfolds
its input into a fresh column buffer on every call (6.75 MiB per call, 17
calls per 12-frame block at 64x64) and is 3-8x slower than oneDNN on those
shapes. The buffers' churn is also what made a long CPU run's peak RSS
wander by ±7 % between runs: glibc keeps them as free heap, laid out
differently each time, while the memory actually in use moves by 2 %.

Only convolutions with a spatial window (height and width both above 1) and
stride 1 are sent, and only calls of at least ``MIN_MACS`` multiply-adds:
pointwise, temporal-only and patchify convolutions, and calls so small that
oneDNN's fixed cost of some 40 us dominates, keep torch's choice, which is
the faster one for them (measured in docs/runtime.md). Anything but a float32
CPU tensor without gradients also keeps torch's path, so a network moved to a
GPU is unaffected.
"""

from __future__ import annotations

import torch
from torch import nn

#: Below this many multiply-adds a call keeps torch's kernel: oneDNN won every measured shape from 1.8 M up and lost some at 0.4 M.
MIN_MACS = 1_000_000


def _onednn_padding(conv: nn.Conv3d) -> list[int] | None:
    """The padding to hand oneDNN for a 3x3-in-space, stride-1 convolution with explicit zero padding (the shape oneDNN
    wins on); None for every other convolution, which keeps torch's choice."""
    height, width = conv.kernel_size[-2], conv.kernel_size[-1]
    if height == 1 or width == 1 or conv.stride != (1, 1, 1) or conv.padding_mode != "zeros" or isinstance(conv.padding, str):
        return None
    return list(conv.padding)


def _onednn_forward(conv: nn.Conv3d, padding: list[int]) -> None:
    torch_forward = conv._conv_forward  # the bound method of nn.Conv3d, used for everything oneDNN should not take
    stride, dilation = list(conv.stride), list(conv.dilation)

    def forward(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        cpu_float = input.device.type == "cpu" and input.dtype == torch.float32 and weight.dtype == torch.float32 and input.dim() == 5
        large = cpu_float and input.numel() // input.shape[1] * weight.numel() >= MIN_MACS  # input positions x (out x in/groups x window)
        gradients = torch.is_grad_enabled() and (input.requires_grad or weight.requires_grad)
        output: torch.Tensor
        if not large or gradients or not torch.backends.mkldnn.enabled:
            output = torch_forward(input, weight, bias)
        else:
            output = torch.mkldnn_convolution(input, weight, bias, padding, stride, dilation, conv.groups)
        return output

    conv._conv_forward = forward  # type: ignore[method-assign]  # an instance attribute: nn.Conv3d.forward calls self._conv_forward


def onednn_convolutions(network: nn.Module) -> int:
    """Send ``network``'s spatial 3-D convolutions to oneDNN on the CPU (once per convolution); how many are sent."""
    if not torch.backends.mkldnn.is_available():  # type: ignore[no-untyped-call]
        return 0
    sent = 0
    for conv in (m for m in network.modules() if isinstance(m, nn.Conv3d)):
        padding = _onednn_padding(conv)
        if padding is not None:
            if "_conv_forward" not in vars(conv):  # not routed yet: the class's method, not an instance attribute
                _onednn_forward(conv, padding)
            sent += 1
    return sent
