"""A tiny random CLIP ViT-H/14-shaped image encoder, written exactly as the Wan2.1-I2V downloads lay it out.

The same file name and keys as the original Wan file (the CLIP ``.pth`` with
Wan's ``visual.*``/``textual.*`` keys) or the Diffusers folders
(``image_encoder/`` by transformers ``save_pretrained``, and
``image_processor/``). Weights are drawn once in Wan's key names from
``seed``; the Diffusers layout is that same state dict converted, so both
layouts load to identical networks. Only InfiniteTalk among the Wan-based
families reads an image encoder; the UMT5 text encoder's writer is shared.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from transformers import CLIPVisionModelWithProjection, PreTrainedTokenizerBase, XLMRobertaTokenizer

from avatarstream.components.wan.layout import Layout
from avatarstream.components.wan.tiny_text_encoder import random_state, unigram_tokenizer
from avatarstream.families.infinitetalk.layout import CLIP_FILE
from avatarstream.models.infinitetalk.image_encoder import (
    CLIP_MEAN,
    CLIP_STD,
    NUM_HEADS,
    clip_vision_config,
    convert_open_clip_visual_to_transformers,
)

#: Tiny CLIP: three blocks, so that 'all but the last' still runs two; 224 px in 14 px patches keeps the real 257 tokens.
CLIP_LAYERS, CLIP_PATCH, CLIP_IMAGE = 3, 14, 224
XLM_ROBERTA_DIR = "xlm-roberta-large"


def write_tiny_image_encoder(base: Path, layout: Layout, clip_dim: int, seed: int) -> None:
    """A random ViT-H/14-shaped CLIP vision tower of width ``clip_dim`` (a multiple of 16) under ``base``, in ``layout``."""
    if clip_dim % NUM_HEADS:
        raise ValueError(f"clip_dim must be a multiple of ViT-H/14's {NUM_HEADS} heads, got {clip_dim}")
    state = wan_clip_state(clip_dim, seed)
    if layout == "original":
        path = base / CLIP_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save(state, path)
        xlm_roberta_tokenizer().save_pretrained(base / XLM_ROBERTA_DIR)
        return
    config = clip_vision_config(
        hidden_size=clip_dim, num_layers=CLIP_LAYERS, intermediate_size=4 * clip_dim, patch_size=CLIP_PATCH, image_size=CLIP_IMAGE, projection_dim=clip_dim // 2
    )
    network = CLIPVisionModelWithProjection(config)
    network.load_state_dict(convert_open_clip_visual_to_transformers(state), strict=True)
    network.save_pretrained(base / "image_encoder")
    _write_preprocessor_config(base / "image_processor" / "preprocessor_config.json")


def wan_clip_state(dim: int, seed: int) -> dict[str, torch.Tensor]:
    """Random weights under the keys of Wan's ``XLMRobertaCLIP``: the full vision tower, a token of the text tower."""
    grid = CLIP_IMAGE // CLIP_PATCH
    shapes: dict[str, tuple[int, ...]] = {
        "visual.patch_embedding.weight": (dim, 3, CLIP_PATCH, CLIP_PATCH),  # no bias: the tower has a pre-norm
        "visual.cls_embedding": (1, 1, dim),
        "visual.pos_embedding": (1, grid * grid + 1, dim),
        "visual.pre_norm.weight": (dim,),
        "visual.pre_norm.bias": (dim,),
    }
    for i in range(CLIP_LAYERS):
        block = f"visual.transformer.{i}."
        shapes |= {
            block + "norm1.weight": (dim,),
            block + "norm1.bias": (dim,),
            block + "attn.to_qkv.weight": (3 * dim, dim),
            block + "attn.to_qkv.bias": (3 * dim,),
            block + "attn.proj.weight": (dim, dim),
            block + "attn.proj.bias": (dim,),
            block + "norm2.weight": (dim,),
            block + "norm2.bias": (dim,),
            block + "mlp.0.weight": (4 * dim, dim),
            block + "mlp.0.bias": (4 * dim,),
            block + "mlp.2.weight": (dim, 4 * dim),
            block + "mlp.2.bias": (dim,),
        }
    shapes |= {"visual.post_norm.weight": (dim,), "visual.post_norm.bias": (dim,), "visual.head": (dim, dim // 2)}
    # the text tower, only sketched: the loader must pass over it
    shapes |= {"textual.token_embedding.weight": (32, dim), "textual.head.0.weight": (dim, dim), "log_scale": ()}
    return random_state(shapes, seed)


def xlm_roberta_tokenizer() -> PreTrainedTokenizerBase:
    """A small XLM-RoBERTa-style tokenizer (only so the original layout is complete; Wan's images never use it)."""
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    backend = unigram_tokenizer(specials, template="<s> $A </s>", template_tokens=["<s>", "</s>"])
    return XLMRobertaTokenizer(tokenizer_object=backend, bos_token="<s>", eos_token="</s>", pad_token="<pad>", unk_token="<unk>", mask_token="<mask>")


def _write_preprocessor_config(path: Path) -> None:
    """Diffusers' ``image_processor/preprocessor_config.json`` for this CLIP, as the real download has it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    config = {
        "crop_size": {"height": CLIP_IMAGE, "width": CLIP_IMAGE},
        "do_center_crop": True,
        "do_convert_rgb": True,
        "do_normalize": True,
        "do_rescale": True,
        "do_resize": True,
        "image_mean": list(CLIP_MEAN),
        "image_processor_type": "CLIPImageProcessor",
        "image_std": list(CLIP_STD),
        "resample": 3,
        "rescale_factor": 1 / 255,
        "size": {"shortest_edge": CLIP_IMAGE},
    }
    path.write_text(json.dumps(config, indent=2) + "\n")
