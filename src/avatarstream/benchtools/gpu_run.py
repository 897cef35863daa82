"""What every family's GPU benchmark shares: random weights built on the device, progress, its command line and results.

A family's GPU benchmark (``families/<name>/gpu_bench.py``) builds its
networks at real size with meta parameters and gives them random weights
straight on the device with ``materialize`` (speed does not depend on the
values), renders its scenarios, and rewrites its JSON after each one with
``write_json``. Nothing here knows a family.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from avatarstream.errors import InputError
from avatarstream.runtime.devices import resolve_device

GIB = 2**30
#: Weight init: small enough that 40 residual blocks stay finite in bf16.
WEIGHT_STD = 0.02


def materialize(
    network: nn.Module, device: torch.device, dtype: torch.dtype, generator: torch.Generator, keep_fp32: Callable[[str], bool] = lambda key: False
) -> None:
    """Give a meta-built network memory on ``device`` and random weights there; buffers keep their computed values.

    Dtypes are set while still on meta (free), so the device never holds a
    float32 copy; ``to_empty`` makes a separate tensor per owner of a shared
    parameter, so ties are restored afterwards.
    """
    buffers = dict(network.named_buffers())  # to_empty replaces them; these keep their values
    ties = shared_parameters(network)
    for key, param in network.named_parameters():
        param.data = torch.empty_like(param, dtype=torch.float32 if keep_fp32(key) else dtype)
    network.to_empty(device=device)
    for owners in ties:
        first = getattr(*owners[0])
        for module, name in owners[1:]:
            setattr(module, name, first)
    fill_random(network, generator)
    with torch.no_grad():
        for key, buffer in buffers.items():
            network.get_buffer(key).copy_(buffer)


def shared_parameters(network: nn.Module) -> list[list[tuple[nn.Module, str]]]:
    """(module, attribute) of every parameter held under more than one name (tied embeddings)."""
    owners: dict[int, list[tuple[nn.Module, str]]] = defaultdict(list)
    for module in network.modules():
        for name, param in module._parameters.items():
            if param is not None:
                owners[id(param)].append((module, name))
    return [o for o in owners.values() if len(o) > 1]


def fill_random(network: nn.Module, generator: torch.Generator) -> None:
    """Norm scales 1, biases 0, everything else N(0, 0.02): activations stay finite through every network."""
    norms = {id(p) for m in network.modules() if type(m).__name__.lower().endswith("norm") for p in m.parameters(recurse=False)}
    with torch.no_grad():
        for key, param in network.named_parameters():
            if key.endswith("bias"):
                param.zero_()
            elif id(param) in norms:
                param.fill_(1.0)
            else:
                param.normal_(0.0, WEIGHT_STD, generator=generator)


class Progress:
    """Timestamped progress lines, flushed at once (the run is watched live, and may be cut short)."""

    def __init__(self) -> None:
        self.start = time.perf_counter()

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def __call__(self, message: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')} +{self.elapsed:6.1f}s] {message}", flush=True)


def is_out_of_memory(exc: BaseException) -> bool:
    """Device OOM, or a failed pinned host allocation (reported by CUDA as a RuntimeError)."""
    return isinstance(exc, torch.OutOfMemoryError) or (isinstance(exc, RuntimeError) and "out of memory" in str(exc))


def reset_device_peak(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def back_on_device(networks: Iterable[nn.Module], device: torch.device) -> None:
    """Every network resident again, so each scenario starts from the same place and the last one's host copies can go."""
    for network in networks:
        network.to(device)
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def environment(device: torch.device) -> dict[str, Any]:
    info: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "device": str(device),
    }
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        info.update(gpu=props.name, gpu_memory_bytes=props.total_memory, capability=f"{props.major}.{props.minor}", cuda=torch.version.cuda)
    return info


def write_json(path: Path, result: dict[str, Any]) -> None:
    """Replace the result file whole (a reader never sees half a file)."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n")
    tmp.replace(path)


def run_parser(description: str, result_file: str, budget_s: float, budget_help: str) -> argparse.ArgumentParser:
    """The flags every GPU benchmark takes: where results go, the device, a tiny dry run, the time budget, CPU threads."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--out", type=Path, required=True, help=f"folder for {result_file}")
    parser.add_argument("--device", default="cuda", help="cuda (the benchmark) or cpu (with --tiny: a dry run)")
    parser.add_argument("--tiny", action="store_true", help="tiny networks and frames: checks the run, measures nothing useful")
    parser.add_argument("--budget-s", type=float, default=budget_s, help=budget_help)
    parser.add_argument("--threads", type=int, default=None, help="CPU threads for torch (1 keeps a dry run steady on a busy machine)")
    return parser


def start_run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[Progress, torch.device]:
    """Threads as asked, the clock started, and the device (an unusable one is the parser's error)."""
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    progress = Progress()
    try:
        return progress, resolve_device(args.device)
    except InputError as exc:
        parser.error(f"{exc} (a dry run: --tiny --device cpu)")
