"""Spatial 3-D convolutions of a network the runtime binds on the CPU run through oneDNN, not torch's im2col fallback."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.profiler import profile

from avatarstream.runtime.cpu_convolution import onednn_convolutions
from avatarstream.runtime.module import Module
from avatarstream.runtime.residency import Runtime

pytestmark = pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="this torch build has no oneDNN")


def kernels(network: nn.Module, x: torch.Tensor) -> set[str]:
    """The convolution kernels one forward of ``network`` ran."""
    with profile() as prof:
        network(x)
    return {e.name for e in prof.events() if e.name in ("aten::mkldnn_convolution", "aten::slow_conv3d_forward")}


def video_convs() -> nn.Sequential:
    """A small video VAE's kinds of convolution: 3x3x3, temporal-only, pointwise, patchify."""
    return nn.Sequential(
        nn.Conv3d(8, 8, 3, padding=(0, 1, 1)), nn.SiLU(), nn.Conv3d(8, 8, (3, 1, 1)), nn.Conv3d(8, 4, 1), nn.Conv3d(4, 4, (1, 2, 2), stride=(1, 2, 2))
    )


def test_spatial_convolutions_leave_the_im2col_path_with_the_same_result() -> None:
    torch.manual_seed(0)
    network = video_convs()
    x = torch.randn(1, 8, 7, 32, 32)  # 8 x 7 x 32 = 1792, far under torch's 20,480: its own choice is slow_conv3d
    with torch.inference_mode():
        before, expected = kernels(network[:1], x), network(x)
        assert onednn_convolutions(network) == 1  # the 3x3x3 one; the others are faster on torch's choice
        routed_forward = network[0]._conv_forward
        assert onednn_convolutions(network) == 1 and network[0]._conv_forward is routed_forward  # a second call wraps nothing twice
        after, routed = kernels(network[:1], x), network(x)
    assert before == {"aten::slow_conv3d_forward"} and after == {"aten::mkldnn_convolution"}
    torch.testing.assert_close(routed, expected, rtol=1e-5, atol=1e-5)


def test_gradients_other_dtypes_and_small_calls_keep_torchs_path() -> None:
    network = video_convs()[:1]
    onednn_convolutions(network)
    with torch.inference_mode():
        assert kernels(network, torch.randn(1, 8, 3, 8, 8)) == {"aten::slow_conv3d_forward"}  # 0.3 M multiply-adds: oneDNN's fixed cost loses
    x = torch.randn(1, 8, 3, 16, 16, requires_grad=True)
    assert kernels(network, x) == {"aten::slow_conv3d_forward"}  # oneDNN's op here has no backward
    network(x).sum().backward()
    assert x.grad is not None and network[0].weight.grad is not None
    with torch.inference_mode():
        assert kernels(network.double(), x.detach().double()) == {"aten::slow_conv3d_forward"}


def test_the_cpu_runtime_routes_the_networks_it_binds() -> None:
    module = Module.build("vae", video_convs, seed=1)
    Runtime(torch.device("cpu")).bind([module])
    with torch.inference_mode():
        assert kernels(module.network[:1], torch.randn(1, 8, 3, 16, 16)) == {"aten::mkldnn_convolution"}
