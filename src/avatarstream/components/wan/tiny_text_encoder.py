"""A tiny random Wan text encoder (UMT5) and its tokenizer, written exactly as the real downloads lay them out.

For tests and for trying a Wan-based family without its 14B download: the
same file names, key names and dtypes as the original Wan file
(``models_t5_umt5-xxl-enc-bf16.pth`` in bf16 with Wan's T5 keys) or as the
Diffusers folder (transformers ``save_pretrained``, sharded with an index).
Weights are drawn once in Wan's key names from ``seed``; the Diffusers layout
is that same state dict converted, so both layouts load to identical networks.
Tokenizers are built in memory from a few sentences, so nothing is downloaded;
the random draw and the tokenizer builder are public for a family's own tiny
encoders.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
from transformers import PreTrainedTokenizerBase, T5Tokenizer, UMT5EncoderModel

from avatarstream.components.wan.layout import T5_FILE, T5_TOKENIZER_DIR, Layout
from avatarstream.components.wan.text_encoder import convert_wan_t5_to_transformers, umt5_config

#: Tiny T5 sizes besides its width: two layers and heads, as in the real model one position bias per layer.
T5_LAYERS, T5_HEADS, T5_FFN, T5_BUCKETS = 2, 2, 64, 32
#: The words of the tiny tokenizers (prompt-like; anything else falls back to characters, or <unk>).
CORPUS = (
    "a woman is talking to the camera in a bright room, close-up portrait",
    "a man speaks softly and smiles, natural light, high quality video",
    "the person nods and looks at the viewer while singing a song",
    "low quality, blurry, static frame, bad hands, deformed face, extra fingers",
    "a cartoon character with big eyes waves and laughs on a stage",
    "an old man reads a story aloud by the window at night",
    "two friends chat happily in a cafe, cinematic lighting, 4k",
    "overexposed, worst quality, jpeg artifacts, subtitles, watermark",
)
#: Tensors that are looked up or added, not multiplied: drawn at a fixed scale rather than by fan-in.
_LOOKUPS = ("token_embedding.weight", "pos_embedding.embedding.weight", "cls_embedding", "pos_embedding", "log_scale")
_ALPHABET = list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ,.!?'\"-:;()")


def write_tiny_text_encoder(base: Path, layout: Layout, text_dim: int, seed: int) -> None:
    """A random UMT5 encoder of width ``text_dim`` and its tokenizer under ``base``, in ``layout``."""
    if text_dim % T5_HEADS:
        raise ValueError(f"text_dim must be a multiple of the tiny encoder's {T5_HEADS} heads, got {text_dim}")
    tokenizer = umt5_tokenizer()
    vocab = -(-len(tokenizer) // 128) * 128  # padded to a multiple of 128, as UMT5-XXL's 256384 for 256300 tokens
    state = wan_t5_state(vocab, text_dim, seed)
    if layout == "original":
        path = base / T5_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save({key: tensor.to(torch.bfloat16) for key, tensor in state.items()}, path)
        tokenizer.save_pretrained(base / T5_TOKENIZER_DIR)
        return
    config = umt5_config(
        vocab_size=vocab, d_model=text_dim, num_layers=T5_LAYERS, num_heads=T5_HEADS, d_kv=text_dim // T5_HEADS, d_ff=T5_FFN, num_buckets=T5_BUCKETS
    )
    network = UMT5EncoderModel(config)
    network.load_state_dict(convert_wan_t5_to_transformers(state), strict=True)
    # sharded with an index, as the real text_encoder/ folder
    # transformers declares PreTrainedModel.to through functools.wraps(nn.Module.to), whose typing leaves self unbound
    network.to(torch.bfloat16).save_pretrained(base / "text_encoder", max_shard_size=_half_size(network))  # type: ignore[arg-type]
    tokenizer.save_pretrained(base / "tokenizer")


def wan_t5_state(vocab: int, dim: int, seed: int) -> dict[str, torch.Tensor]:
    """Random weights under the keys of Wan's ``T5Encoder`` (UMT5: no shared position bias), bf16-representable."""
    ffn, heads = T5_FFN, T5_HEADS
    shapes: dict[str, tuple[int, ...]] = {"token_embedding.weight": (vocab, dim)}
    for i in range(T5_LAYERS):
        block = f"blocks.{i}."
        shapes |= {block + f"attn.{p}.weight": (dim, dim) for p in "qkvo"}
        shapes |= {
            block + "norm1.weight": (dim,),
            block + "norm2.weight": (dim,),
            block + "ffn.gate.0.weight": (ffn, dim),
            block + "ffn.fc1.weight": (ffn, dim),
            block + "ffn.fc2.weight": (dim, ffn),
            block + "pos_embedding.embedding.weight": (T5_BUCKETS, heads),
        }
    shapes["norm.weight"] = (dim,)
    return {key: tensor.to(torch.bfloat16).float() for key, tensor in random_state(shapes, seed).items()}


def random_state(shapes: dict[str, tuple[int, ...]], seed: int) -> dict[str, torch.Tensor]:
    """Seeded normal weights: norm scales near 1, small biases, lookups O(1), matrices scaled by fan-in."""
    generator = torch.Generator().manual_seed(seed)
    state = {}
    for key, shape in shapes.items():
        noise = torch.randn(shape, generator=generator)
        if key.endswith("bias"):
            state[key] = 0.1 * noise
        elif "norm" in key:
            state[key] = 1.0 + 0.1 * noise
        elif key.endswith(_LOOKUPS):
            state[key] = 0.5 * noise
        else:
            state[key] = noise / math.sqrt(math.prod(shape[1:]))
    return state


def umt5_tokenizer() -> PreTrainedTokenizerBase:
    """A small T5-style tokenizer: pad 0, EOS 1, unk 2, EOS appended, 100 sentinel tokens."""
    specials = ["<pad>", "</s>", "<unk>"]
    backend = unigram_tokenizer(specials, template="$A </s>", template_tokens=["</s>"])
    return T5Tokenizer(tokenizer_object=backend, pad_token="<pad>", eos_token="</s>", unk_token="<unk>", extra_ids=100)


def unigram_tokenizer(specials: list[str], template: str, template_tokens: Iterable[str]) -> Tokenizer:
    """A SentencePiece-like Unigram tokenizer over the words and characters of ``CORPUS``.

    Built from a fixed vocabulary rather than trained (training is not
    deterministic across runs); every piece scores the same, so the longest pieces win.
    """
    words = sorted({"\u2581" + word for line in CORPUS for word in line.split()})
    pieces = list(dict.fromkeys(specials + ["\u2581"] + [c for c in _ALPHABET if c != " "] + ["\u2581" + c for c in _ALPHABET if c.isalnum()] + words))
    backend = Tokenizer(models.Unigram([(piece, 0.0 if piece in specials else -1.0) for piece in pieces], unk_id=specials.index("<unk>")))
    backend.normalizer = normalizers.NFKC()
    backend.pre_tokenizer = pre_tokenizers.Metaspace()
    backend.decoder = decoders.Metaspace()
    backend.post_processor = processors.TemplateProcessing(single=template, special_tokens=[(t, backend.token_to_id(t)) for t in template_tokens])
    return backend


def _half_size(network: torch.nn.Module) -> int:
    """A shard size that splits the checkpoint in at least two files."""
    return max(sum(p.numel() * p.element_size() for p in network.parameters()) // 2, 1)
