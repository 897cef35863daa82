"""Load the InfiniteTalk DiT from the publisher's quantized file (``InfiniteTalk/quant_models/infinitetalk_single_fp8.safetensors``
or ``..._int8``) as it is.

MeiGen-AI publishes the whole DiT (the Wan base and the adapter merged, under
the original key names) quantized by optimum-quanto, weight-only, with its
quantization map beside it (the same name ending ``.json``). Its int8 or e4m3
values and per-row scales become torchao weights unchanged; everything else
(norms, biases, modulation, the patch embedding) loads as the bf16 download's
does. The sizes come from the base folder's config and the file's shapes, so
the base's own DiT shards and the adapter file are not read.
"""

from __future__ import annotations

from pathlib import Path

import torch
from diffusers.loaders.single_file_utils import convert_wan_transformer_to_diffusers

from avatarstream.components.wan.layout import Layout
from avatarstream.families.infinitetalk.load_dit import dit_bytes, dit_config_path, read_adapter_config, read_dit_config
from avatarstream.models.infinitetalk.config import AdapterConfig
from avatarstream.models.infinitetalk.dit import FP32_PARAMETERS, InfiniteTalkDiT, is_adapter_key
from avatarstream.runtime.quantize import linear_weights
from avatarstream.weights.memory_check import require_fits
from avatarstream.weights.meta_load import MetaLoader, empty_weights
from avatarstream.weights.quanto import QuantoCheckpoint, QuantoHeader, map_beside

_PLACEHOLDER = torch.empty(0)


def read_quantized_adapter_config(path: Path, blocks: int, channels: int) -> AdapterConfig:
    """The adapter's sizes from the quantized file's shapes (it holds the adapter merged in)."""
    return read_adapter_config(path, blocks, channels, QuantoHeader(path).shapes())


def load_quantized_dit(base: Path, layout: Layout, path: Path, adapter: AdapterConfig, dtype: torch.dtype, device: torch.device) -> InfiniteTalkDiT:
    """The DiT built on the meta device and filled from ``path``, its linear layers computing in ``dtype`` on ``device``."""
    config = read_dit_config(base, layout, QuantoHeader(path))
    require_fits(dit_bytes(config, adapter, torch.float8_e4m3fn), "a quantized DiT", path)  # one byte per weight; scales and norms are small
    checkpoint = QuantoCheckpoint.read(path, map_beside(path)).renamed(network_key)
    with empty_weights():
        network = InfiniteTalkDiT(config, adapter)
    loader = MetaLoader(network, "InfiniteTalk DiT", dtype, keep_fp32=lambda key: any(p in key for p in FP32_PARAMETERS))
    loader.load(checkpoint.plain, path)
    loader.assign(linear_weights(network, checkpoint.quantized, checkpoint.mode, device, loader.precision, path), path)
    return loader.finish([path, dit_config_path(base, layout)])


def network_key(key: str) -> str:
    """An original Wan key -> the network's: diffusers' names for the base, the adapter's own for the adapter."""
    if is_adapter_key(key):
        return key
    (converted,) = convert_wan_transformer_to_diffusers({key: _PLACEHOLDER}).keys()
    return str(converted)
