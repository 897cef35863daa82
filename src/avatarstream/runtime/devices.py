"""Device selection and device-memory facts that degrade cleanly on CPU."""

from __future__ import annotations

import torch

from avatarstream.errors import InputError
from avatarstream.runtime.names import DEVICE_CHOICES


def resolve_device(name: str) -> torch.device:
    """``auto`` picks CUDA when present; ``cuda`` without a GPU is a clear error."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cpu":
        return torch.device("cpu")
    if name == "cuda" or name.startswith("cuda:"):
        if not torch.cuda.is_available():
            raise InputError(f"device {name!r} requested but no CUDA GPU is available; use --device cpu or auto")
        return torch.device(name)
    raise InputError(f"unknown device {name!r}; choose one of: {', '.join(DEVICE_CHOICES)} (or cuda:N)")


def synchronize(device: torch.device) -> None:
    """Wait for queued kernels so wall-clock timings mean something on GPU."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def upload(tensor: torch.Tensor, device: torch.device, dtype: torch.dtype | None = None) -> torch.Tensor:
    """``tensor`` on ``device`` without the host waiting: a plain copy from pageable host memory waits for the whole
    stream, so on CUDA a host tensor is staged in pinned memory (torch's caching host allocator) and copied asynchronously."""
    if device.type == "cuda" and tensor.device.type == "cpu":
        tensor = tensor.pin_memory().to(device, non_blocking=True)
    return tensor.to(device, dtype)


def peak_device_bytes(device: torch.device) -> int | None:
    """Peak allocated device memory, or None where there is no device allocator (CPU)."""
    if device.type == "cuda":
        return int(torch.cuda.max_memory_allocated(device))
    return None
