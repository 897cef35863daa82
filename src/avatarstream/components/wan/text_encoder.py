"""The Wan text encoder (UMT5-XXL encoder) on transformers' ``UMT5EncoderModel``.

Wan ships the encoder as a state dict of its own T5 implementation
(``token_embedding``, ``blocks.N.attn.q`` ...); ``convert_wan_t5_to_transformers``
renames it to transformers' keys, and ``umt5_config_from_wan`` reads the sizes
from the tensor shapes. ``TextEncoder`` tokenizes and encodes as Wan does:
whitespace-cleaned prompts, padded to 512 tokens, then each embedding cut back
to the prompt's own tokens (its attention mask).
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence

import ftfy
import torch
from transformers import PreTrainedTokenizerBase, UMT5Config, UMT5EncoderModel

from avatarstream.components.wan.config import TEXT_LEN

#: Both names under which ``UMT5EncoderModel`` holds its one token embedding (tied).
EMBEDDING_KEYS = ("shared.weight", "encoder.embed_tokens.weight")
#: T5's relative-position cut-off (Wan's ``T5RelativeEmbedding(max_dist=128)``); not stored in any tensor.
MAX_DISTANCE = 128
#: RMS-norm epsilon of Wan's ``T5LayerNorm``.
NORM_EPS = 1e-6

_BLOCK = re.compile(r"blocks\.(\d+)\.(.+)")
#: Wan block-relative names -> transformers names under ``encoder.block.N.``.
_BLOCK_KEYS = {
    "norm1.weight": "layer.0.layer_norm.weight",
    "attn.q.weight": "layer.0.SelfAttention.q.weight",
    "attn.k.weight": "layer.0.SelfAttention.k.weight",
    "attn.v.weight": "layer.0.SelfAttention.v.weight",
    "attn.o.weight": "layer.0.SelfAttention.o.weight",
    "pos_embedding.embedding.weight": "layer.0.SelfAttention.relative_attention_bias.weight",
    "norm2.weight": "layer.1.layer_norm.weight",
    "ffn.gate.0.weight": "layer.1.DenseReluDense.wi_0.weight",  # the GELU branch
    "ffn.fc1.weight": "layer.1.DenseReluDense.wi_1.weight",  # the linear branch
    "ffn.fc2.weight": "layer.1.DenseReluDense.wo.weight",
}


def umt5_config(
    *,
    vocab_size: int = 256384,
    d_model: int = 4096,
    num_layers: int = 24,
    num_heads: int = 64,
    d_kv: int = 64,
    d_ff: int = 10240,
    num_buckets: int = 32,
) -> UMT5Config:
    """A UMT5 encoder config; the defaults are UMT5-XXL's. Every layer has its own position bias in UMT5."""
    return UMT5Config(
        vocab_size=vocab_size,
        d_model=d_model,
        num_layers=num_layers,
        num_decoder_layers=num_layers,
        num_heads=num_heads,
        d_kv=d_kv,
        d_ff=d_ff,
        relative_attention_num_buckets=num_buckets,
        relative_attention_max_distance=MAX_DISTANCE,
        feed_forward_proj="gated-gelu",  # tanh-approximated GELU, as Wan's T5 GELU
        layer_norm_epsilon=NORM_EPS,
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=0,
    )


def umt5_config_from_wan(shapes: Mapping[str, Sequence[int]]) -> UMT5Config:
    """Sizes of a Wan T5 encoder state dict from its tensor shapes; ``KeyError``/``ValueError`` if they do not fit."""
    vocab_size, d_model = shapes["token_embedding.weight"]
    inner = shapes["blocks.0.attn.q.weight"][0]
    num_buckets, num_heads = shapes["blocks.0.pos_embedding.embedding.weight"]
    d_ff = shapes["blocks.0.ffn.fc1.weight"][0]
    if inner % num_heads:
        raise ValueError(f"attention width {inner} is not a multiple of the {num_heads} heads of the position bias")
    blocks = {int(match.group(1)) for key in shapes if (match := _BLOCK.fullmatch(key))}
    return umt5_config(
        vocab_size=vocab_size,
        d_model=d_model,
        num_layers=max(blocks) + 1,
        num_heads=num_heads,
        d_kv=inner // num_heads,
        d_ff=d_ff,
        num_buckets=num_buckets,
    )


def convert_wan_t5_to_transformers(state_dict: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Wan T5 encoder keys -> ``UMT5EncoderModel`` keys (the embedding under both tied names, one tensor).

    Raises ``ValueError`` naming the keys it does not know, so nothing is dropped unseen.
    """
    converted: dict[str, torch.Tensor] = {}
    unknown = []
    for key, tensor in state_dict.items():
        name = _transformers_t5_key(key)
        if name is None:
            unknown.append(key)
        elif name == EMBEDDING_KEYS[0]:
            converted.update(dict.fromkeys(EMBEDDING_KEYS, tensor))
        else:
            converted[name] = tensor
    if unknown:
        raise ValueError(f"not a Wan UMT5 encoder tensor: {', '.join(sorted(unknown)[:5])}{' ...' if len(unknown) > 5 else ''}")
    return converted


def _transformers_t5_key(key: str) -> str | None:
    if key == "token_embedding.weight":
        return EMBEDDING_KEYS[0]
    if key == "norm.weight":
        return "encoder.final_layer_norm.weight"
    match = _BLOCK.fullmatch(key)
    if match and match.group(2) in _BLOCK_KEYS:
        return f"encoder.block.{match.group(1)}.{_BLOCK_KEYS[match.group(2)]}"
    return None


def clean_prompt(text: str) -> str:
    """Wan's 'whitespace' cleaning: ftfy's repair (mojibake, curly quotes), HTML entities decoded twice, one space per run."""
    text = html.unescape(html.unescape(ftfy.fix_text(text))).strip()
    return re.sub(r"\s+", " ", text).strip()


class TextEncoder:
    """Prompts -> per-prompt UMT5 token embeddings ``[L_i, d_model]``, unpadded, as Wan's ``T5EncoderModel``."""

    def __init__(self, network: UMT5EncoderModel, tokenizer: PreTrainedTokenizerBase, text_len: int = TEXT_LEN) -> None:
        self.network = network
        self.tokenizer = tokenizer
        self.text_len = text_len

    def tokenize(self, prompts: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """Token ids and attention mask ``[B, text_len]``: cleaned, truncated and padded to ``text_len``, EOS added."""
        batch = self.tokenizer(
            [clean_prompt(p) for p in prompts],
            padding="max_length",
            truncation=True,
            max_length=self.text_len,
            add_special_tokens=True,
            return_tensors="pt",
        )
        return batch.input_ids, batch.attention_mask

    @torch.inference_mode()
    def encode(self, prompts: list[str]) -> list[torch.Tensor]:
        """The encoder runs on the padded batch (padding masked out); each output keeps only its prompt's tokens."""
        ids, mask = self.tokenize(prompts)
        device = self.network.get_input_embeddings().weight.device
        hidden = self.network(input_ids=ids.to(device), attention_mask=mask.to(device)).last_hidden_state
        lengths = mask.gt(0).sum(dim=1).tolist()
        return [states[:length] for states, length in zip(hidden, lengths)]
