"""Load FlashVSR's files as users download them, each sized before anything is allocated and built on the meta device.

- the DiT (``diffusion_pytorch_model_streaming_dmd.safetensors``, original Wan key names): sizes from ``config.json``
  when the folder has one, otherwise from the tensor shapes (heads 128 wide, as in every Wan DiT);
- the LQ projection (``LQ_proj_in.ckpt``, loaded strictly, as the reference does): sizes from its shapes;
- the TCDecoder (``TCDecoder.ckpt``): the reference loads it with ``strict=False``. Here every decoder weight must be
  there except the two identity-initialised 3x3 convs, which keep their identity start when absent (what the
  reference's non-strict load leaves them); tensors outside the decoder (``decoder.N``) are ignored and logged;
- the prompt embedding (``posi_prompt.pth``), a tensor [1, text_len, text_dim].

fp32 and bf16 files load into any requested dtype.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import torch
from torch import nn

from avatarstream.errors import InputError
from avatarstream.models.flashvsr.config import DiTConfig, LQProjConfig, Shapes, TCDecoderConfig
from avatarstream.models.flashvsr.dit import FlashVSRDiT
from avatarstream.models.flashvsr.lq_proj import LQProjection
from avatarstream.models.flashvsr.tcdecoder import IDENTITY_CONVS, TCDecoder
from avatarstream.weights.config_values import MAX_HEADS, MAX_LAYERS, ConfigValues, built_from, read_json_object
from avatarstream.weights.files import StateDict, read_pth, read_safetensors, safetensors_shapes
from avatarstream.weights.memory_check import meta_bytes, require_fits
from avatarstream.weights.meta_load import MetaLoader, empty_weights

log = logging.getLogger(__name__)
C = TypeVar("C")
N = TypeVar("N", bound=nn.Module)

LATENT_CHANNELS = 16
EXPECTED_DIT = "expected FlashVSR's Wan2.1-T2V DiT (diffusion_pytorch_model_streaming_dmd.safetensors) or its config.json"


def _shapes(state: StateDict) -> dict[str, tuple[int, ...]]:
    return {k: tuple(v.shape) for k, v in state.items()}


def _recognised(read: Callable[[Shapes], C], shapes: Shapes, path: Path, what: str) -> C:
    """``read(shapes)`` (a config's ``from_shapes``), or one InputError naming the file when its keys or shapes are another model's."""
    try:
        return read(shapes)
    except KeyError as exc:
        raise InputError(f"{path} has no {exc.args[0]} of the expected rank: it is not {what}") from exc
    except ValueError as exc:
        raise InputError(f"{path}: {exc} (expected {what})") from exc


def dit_config(path: Path, config: Path | None) -> DiTConfig:
    """The DiT's sizes: ``config`` (a config.json, every value checked) or, without one, the weights' shapes."""
    if config is None:
        found = _recognised(DiTConfig.from_shapes, safetensors_shapes(path), path, "a Wan2.1-T2V DiT in the original key names")
    else:
        values = ConfigValues(read_json_object(config, EXPECTED_DIT), config, EXPECTED_DIT)
        heads = values.count("num_heads", high=MAX_HEADS)
        dim = values.count("dim")
        values.divides("dim", dim, heads, "num_heads")
        with built_from(config, EXPECTED_DIT):
            found = DiTConfig(
                dim=dim,
                num_heads=heads,
                num_layers=values.count("num_layers", high=MAX_LAYERS),
                ffn_dim=values.count("ffn_dim"),
                text_dim=values.count("text_dim"),
                freq_dim=values.count("freq_dim", 256, low=2, high=1 << 16),
                in_dim=values.count("in_dim", LATENT_CHANNELS),
                out_dim=values.count("out_dim", LATENT_CHANNELS),
                eps=values.number("eps", 1e-6, low=0.0, high=1.0),
                patch_size=values.counts("patch_size", (1, 2, 2), length=range(3, 4)),  # type: ignore[arg-type]
            )
    if found.in_dim != LATENT_CHANNELS or found.out_dim != LATENT_CHANNELS:
        raise InputError(f"{config or path} describes a DiT of {found.in_dim} input channels; FlashVSR's takes the {LATENT_CHANNELS} latent channels (T2V)")
    return found


def _meta_load(build: Callable[[], N], tensors: Callable[[], StateDict], path: Path, name: str, dtype: torch.dtype) -> N:
    """``build()`` sized first (refused when the machine cannot hold it), then built on meta and filled from ``tensors()``."""
    require_fits(meta_bytes(build, torch.finfo(dtype).bits // 8), f"the {name}", path)
    with empty_weights():
        network = build()
    loader = MetaLoader(network, name, dtype)
    loader.load(tensors(), path)
    return loader.finish([path])


def load_dit(path: Path, config: Path | None, dtype: torch.dtype) -> FlashVSRDiT:
    sizes = dit_config(path, config)
    return _meta_load(lambda: FlashVSRDiT(sizes), lambda: read_safetensors(path), path, "FlashVSR DiT", dtype)


def load_lq_proj(path: Path, dtype: torch.dtype) -> LQProjection:
    state = read_pth(path)
    config = _recognised(LQProjConfig.from_shapes, _shapes(state), path, "FlashVSR's LQ projection (LQ_proj_in.ckpt)")
    return _meta_load(lambda: LQProjection(config), lambda: state, path, "FlashVSR LQ projection", dtype)


def load_tcdecoder(path: Path, dtype: torch.dtype) -> TCDecoder:
    state = read_pth(path)
    config = _recognised(TCDecoderConfig.from_shapes, _shapes(state), path, "FlashVSR's TCDecoder (TCDecoder.ckpt)")
    ignored = sorted(k for k in state if not k.startswith("decoder."))
    if ignored:
        log.info("%s: ignoring %d tensors outside the decoder (%s ...), as the reference's non-strict load does", path, len(ignored), ignored[0])
    decoder = {k: v for k, v in state.items() if k.startswith("decoder.")}
    for index in IDENTITY_CONVS:  # absent: the identity start the reference keeps
        key = f"decoder.{index}.weight"
        if key not in decoder:
            channels = config.channels[0 if index == IDENTITY_CONVS[0] else 3]
            decoder[key] = nn.init.dirac_(torch.empty(channels, channels, 3, 3))
    return _meta_load(lambda: TCDecoder(config), lambda: decoder, path, "FlashVSR TCDecoder", dtype)


def load_prompt(path: Path, text_dim: int, dtype: torch.dtype) -> torch.Tensor:
    """The fixed prompt embedding [1, text_len, text_dim] (saved as a bare tensor, read weights-only)."""
    try:
        value = torch.load(str(path), map_location="cpu", weights_only=True)
    except Exception as exc:  # the weights-only unpickler fails on hostile bytes with whatever its parsing raises
        raise InputError(f"cannot read {path} weights-only: {type(exc).__name__}; expected FlashVSR's posi_prompt.pth (a tensor)") from exc
    if isinstance(value, dict) and len(value) == 1:
        value = next(iter(value.values()))
    if not isinstance(value, torch.Tensor) or value.ndim != 3 or value.shape[0] != 1 or value.shape[2] != text_dim or not value.is_floating_point():
        shape = list(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
        raise InputError(f"{path} holds {shape}; expected the prompt embedding [1, text_len, {text_dim}] (FlashVSR's posi_prompt.pth)")
    return value.to(dtype)
