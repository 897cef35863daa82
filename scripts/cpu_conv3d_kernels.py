"""Time each kind of video convolution on the CPU with torch's own kernel choice and with oneDNN.

The evidence behind ``runtime/cpu_convolution``: which convolutions the CPU
runtime sends to oneDNN (those that win) and which keep torch's choice.
docs/runtime.md quotes the figures.

  python scripts/cpu_conv3d_kernels.py --threads 1 2
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F

#: (what it is, input [N, C, T, H, W], weight [out, in, kT, kH, kW], padding, stride)
CASES = [
    ("3x3x3, tiny VAE at 64x64", (1, 16, 5, 64, 64), (16, 16, 3, 3, 3), (0, 1, 1), (1, 1, 1)),
    ("3x3x3, tiny VAE at 32x32", (1, 32, 5, 32, 32), (32, 32, 3, 3, 3), (0, 1, 1), (1, 1, 1)),
    ("3x3x3, Wan VAE 96 channels, 60x104", (1, 96, 3, 60, 104), (96, 96, 3, 3, 3), (0, 1, 1), (1, 1, 1)),
    ("3x3x3, 4 channels at 16x16 (0.1 M multiply-adds)", (1, 4, 3, 16, 16), (4, 4, 3, 3, 3), (0, 1, 1), (1, 1, 1)),
    ("1x3x3 (spatial only)", (1, 16, 5, 64, 64), (16, 16, 1, 3, 3), (0, 1, 1), (1, 1, 1)),
    ("3x1x1 (temporal only)", (1, 64, 3, 32, 32), (128, 64, 3, 1, 1), (0, 0, 0), (1, 1, 1)),
    ("1x1x1 (pointwise)", (1, 16, 1, 64, 64), (32, 16, 1, 1, 1), (0, 0, 0), (1, 1, 1)),
    ("1x2x2 stride 2 (DiT patchify, 21x60x104)", (1, 16, 21, 60, 104), (1536, 16, 1, 2, 2), (0, 0, 0), (1, 2, 2)),
]


def milliseconds(run: Callable[[], torch.Tensor], repeats: int) -> float:
    run()
    start = time.perf_counter()
    for _ in range(repeats):
        run()
    return (time.perf_counter() - start) / repeats * 1000


def time_both(
    input_shape: tuple[int, ...], weight_shape: tuple[int, ...], padding: tuple[int, ...], stride: tuple[int, ...], repeats: int
) -> tuple[float, float]:
    """Milliseconds per call with torch's own kernel choice, and through oneDNN."""
    x, weight, bias = torch.randn(input_shape), torch.randn(weight_shape), torch.randn(weight_shape[0])
    with torch.inference_mode():
        native = milliseconds(lambda: F.conv3d(x, weight, bias, stride, padding), repeats)
        onednn = milliseconds(lambda: torch.mkldnn_convolution(x, weight, bias, padding, stride, (1, 1, 1), 1), repeats)
    return native, onednn


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, nargs="+", default=[1], help="torch thread counts to time (default: 1)")
    parser.add_argument("--repeats", type=int, default=20, help="calls per timing (default: 20)")
    args = parser.parse_args()
    torch.manual_seed(0)
    print("| convolution | threads | torch's choice (ms) | oneDNN (ms) |\n|---|---|---|---|")
    for threads in args.threads:
        torch.set_num_threads(threads)
        for name, input_shape, weight_shape, padding, stride in CASES:
            native, onednn = time_both(input_shape, weight_shape, padding, stride, args.repeats)
            print(f"| {name} | {threads} | {native:.2f} | {onednn:.2f} |")


if __name__ == "__main__":
    main()
