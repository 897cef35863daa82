"""The Wan image encoder (open-clip XLM-RoBERTa-large ViT-H/14, vision tower only) on transformers' ``CLIPVisionModel``.

Wan ships the whole CLIP (vision and text towers) as one state dict of its own
implementation (``visual.transformer.N.attn.to_qkv`` ...);
``convert_open_clip_visual_to_transformers`` maps the vision tower to
transformers' keys, splitting the packed q/k/v projection. Wan's image
features are the tokens after all but the last transformer block, before any
final norm: transformers' ``hidden_states[-2]``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import torch
import torch.nn.functional as F
from transformers import CLIPVisionConfig, CLIPVisionModel

#: Normalization of OpenAI CLIP, which Wan uses for this model.
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
#: Attention heads of ViT-H/14; no tensor shape tells the head count.
NUM_HEADS = 16
#: LayerNorm epsilon of Wan's CLIP (``norm_eps=1e-5``).
NORM_EPS = 1e-5
#: Prefix of the vision tower in ``CLIPVisionModelWithProjection`` files (the Diffusers download's ``image_encoder/``).
VISION_PREFIX = "vision_model."
#: The pooled projection of those files; the features Wan uses never pass through it.
PROJECTION_KEY = "visual_projection.weight"

_BLOCK = re.compile(r"visual\.transformer\.(\d+)\.(.+)")
#: Wan block-relative names -> transformers names under ``encoder.layers.N.`` (q/k/v are split apart).
_BLOCK_KEYS = {
    "norm1.weight": "layer_norm1.weight",
    "norm1.bias": "layer_norm1.bias",
    "attn.proj.weight": "self_attn.out_proj.weight",
    "attn.proj.bias": "self_attn.out_proj.bias",
    "norm2.weight": "layer_norm2.weight",
    "norm2.bias": "layer_norm2.bias",
    "mlp.0.weight": "mlp.fc1.weight",
    "mlp.0.bias": "mlp.fc1.bias",
    "mlp.2.weight": "mlp.fc2.weight",
    "mlp.2.bias": "mlp.fc2.bias",
}
_QKV = {"attn.to_qkv.weight": "weight", "attn.to_qkv.bias": "bias"}
_TOP_KEYS = {
    "visual.patch_embedding.weight": "embeddings.patch_embedding.weight",
    "visual.pre_norm.weight": "pre_layrnorm.weight",
    "visual.pre_norm.bias": "pre_layrnorm.bias",
    "visual.post_norm.weight": "post_layernorm.weight",
    "visual.post_norm.bias": "post_layernorm.bias",
}


def clip_vision_config(
    *,
    hidden_size: int = 1280,
    num_layers: int = 32,
    num_heads: int = NUM_HEADS,
    intermediate_size: int = 5120,
    patch_size: int = 14,
    image_size: int = 224,
    projection_dim: int = 1024,
) -> CLIPVisionConfig:
    """A CLIP vision config; the defaults are ViT-H/14's, with Wan's exact GELU and LayerNorm epsilon."""
    return CLIPVisionConfig(
        hidden_size=hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        intermediate_size=intermediate_size,
        patch_size=patch_size,
        image_size=image_size,
        projection_dim=projection_dim,
        hidden_act="gelu",
        layer_norm_eps=NORM_EPS,
    )


def clip_vision_config_from_wan(shapes: Mapping[str, Sequence[int]]) -> CLIPVisionConfig:
    """Sizes of Wan's CLIP vision tower from its tensor shapes; ``KeyError``/``ValueError`` if they do not fit."""
    hidden, _, patch, _ = shapes["visual.patch_embedding.weight"]
    positions = shapes["visual.pos_embedding"][1]
    grid = round((positions - 1) ** 0.5)
    if grid * grid + 1 != positions:
        raise ValueError(f"{positions} position embeddings are not a square grid of patches plus the class token")
    if hidden % NUM_HEADS:
        raise ValueError(f"width {hidden} is not a multiple of the {NUM_HEADS} heads of ViT-H/14")
    blocks = {int(match.group(1)) for key in shapes if (match := _BLOCK.fullmatch(key))}
    return clip_vision_config(
        hidden_size=hidden,
        num_layers=max(blocks) + 1,
        intermediate_size=shapes["visual.transformer.0.mlp.0.weight"][0],
        patch_size=patch,
        image_size=grid * patch,
        projection_dim=shapes["visual.head"][1],
    )


def convert_open_clip_visual_to_transformers(state_dict: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Wan's CLIP ``visual.*`` keys -> ``CLIPVisionModelWithProjection`` keys, those of the Diffusers download.

    Every vision tensor has its counterpart there (the head becomes
    ``visual_projection``), so both layouts then go through ``vision_model_tensors``.

    Keys outside ``visual.`` (the XLM-RoBERTa text tower, ``log_scale``) are left
    out on purpose: Wan encodes only images with this model. An unknown
    ``visual.*`` key raises ``ValueError``.
    """
    converted: dict[str, torch.Tensor] = {}
    unknown = []
    for key, tensor in state_dict.items():
        if not key.startswith("visual."):
            continue
        pairs = _transformers_clip_tensors(key, tensor)
        if pairs is None:
            unknown.append(key)
        else:
            converted.update(pairs)
    if unknown:
        raise ValueError(f"not a CLIP ViT tensor: {', '.join(sorted(unknown)[:5])}{' ...' if len(unknown) > 5 else ''}")
    return converted


def _transformers_clip_tensors(key: str, tensor: torch.Tensor) -> dict[str, torch.Tensor] | None:
    if key in _TOP_KEYS:
        return {VISION_PREFIX + _TOP_KEYS[key]: tensor}
    if key == "visual.cls_embedding":  # [1, 1, D] -> [D]
        return {VISION_PREFIX + "embeddings.class_embedding": tensor.reshape(-1)}
    if key == "visual.pos_embedding":  # [1, P, D] -> [P, D]
        return {VISION_PREFIX + "embeddings.position_embedding.weight": tensor.reshape(tensor.shape[-2:])}
    if key == "visual.head":  # x @ head, [D, out] -> a Linear weight [out, D]
        return {PROJECTION_KEY: tensor.t()}
    match = _BLOCK.fullmatch(key)
    if match is None:
        return None
    prefix, name = f"{VISION_PREFIX}encoder.layers.{match.group(1)}.", match.group(2)
    if name in _BLOCK_KEYS:
        return {prefix + _BLOCK_KEYS[name]: tensor}
    if name in _QKV:  # rows are q, then k, then v
        q, k, v = tensor.chunk(3, dim=0)
        kind = _QKV[name]
        return {f"{prefix}self_attn.{proj}_proj.{kind}": part for proj, part in zip("qkv", (q, k, v))}
    return None


def vision_model_tensors(state_dict: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``CLIPVisionModel``'s own names for a ``CLIPVisionModelWithProjection`` (or older ``CLIPVisionModel``) file.

    transformers 5 keeps ``CLIPVisionModel``'s tensors without the
    ``vision_model.`` prefix; the pooled projection is dropped on purpose (unused by Wan).
    """
    return {key.removeprefix(VISION_PREFIX): tensor for key, tensor in state_dict.items() if key != PROJECTION_KEY}


class ImageEncoder:
    """Images in [-1, 1] -> Wan's CLIP image tokens ``[B, 257, hidden]``, as Wan's ``CLIPModel.visual``."""

    def __init__(self, network: CLIPVisionModel, mean: Sequence[float] = CLIP_MEAN, std: Sequence[float] = CLIP_STD) -> None:
        self.network = network
        self.mean = torch.tensor(mean).view(1, 3, 1, 1)
        self.std = torch.tensor(std).view(1, 3, 1, 1)

    def preprocess(self, image: torch.Tensor) -> torch.Tensor:
        """Bicubic resize to the model's square size (aspect not kept, as Wan), [-1, 1] -> [0, 1], CLIP-normalized, in fp32."""
        size = self.network.config.image_size
        if not isinstance(size, int):
            raise TypeError(f"CLIP image encoder: expected one square image size, got {size!r}")
        pixels = F.interpolate(image.float(), size=(size, size), mode="bicubic", align_corners=False)
        return (pixels * 0.5 + 0.5 - self.mean.to(pixels.device)) / self.std.to(pixels.device)

    @torch.inference_mode()
    def encode(self, image: torch.Tensor) -> torch.Tensor:
        """``image`` ``[B, 3, H, W]`` in [-1, 1]; the tokens after all but the last block (Wan's ``use_31_block``)."""
        weight = next(self.network.parameters())
        pixels = self.preprocess(image.to(weight.device)).to(weight.dtype)
        return self.network(pixel_values=pixels, output_hidden_states=True).hidden_states[-2]
