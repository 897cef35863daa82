"""InfiniteTalk's text (UMT5) and image (CLIP ViT-H/14) encoders: key conversion, both download layouts, outputs, bad files.

The outputs are checked against small forward passes written here straight
from Wan's key names and Wan's maths, independent of transformers.
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from transformers import CLIPVisionModelWithProjection, UMT5EncoderModel

from avatarstream.components.wan.layout import T5_FILE, T5_TOKENIZER_DIR
from avatarstream.components.wan.load_text_encoder import load_text_encoder
from avatarstream.components.wan.text_encoder import TextEncoder, convert_wan_t5_to_transformers, umt5_config_from_wan
from avatarstream.components.wan.tiny_text_encoder import T5_HEADS, T5_LAYERS, wan_t5_state, write_tiny_text_encoder
from avatarstream.errors import InputError
from avatarstream.families.infinitetalk.layout import CLIP_FILE
from avatarstream.families.infinitetalk.load_image_encoder import load_image_encoder
from avatarstream.families.infinitetalk.tiny_image_encoder import CLIP_LAYERS, wan_clip_state, write_tiny_image_encoder
from avatarstream.models.infinitetalk.image_encoder import (
    CLIP_MEAN,
    CLIP_STD,
    NUM_HEADS,
    ImageEncoder,
    clip_vision_config_from_wan,
    convert_open_clip_visual_to_transformers,
)

TEXT_DIM, CLIP_DIM, SEED = 32, 32, 7
PROMPTS = ["a woman is talking to the camera", "  low quality,\n blurry   &amp; static  ", " ".join(["a man speaks softly"] * 150), "x"]


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Both layouts written from the same seed, once for the module (tests that damage files copy them first)."""
    root = tmp_path_factory.mktemp("encoders")
    for layout in ("original", "diffusers"):
        write_tiny_text_encoder(root / layout, layout, TEXT_DIM, SEED)  # type: ignore[arg-type]
        write_tiny_image_encoder(root / layout, layout, CLIP_DIM, SEED)  # type: ignore[arg-type]
    return {"original": root / "original", "diffusers": root / "diffusers"}


@pytest.fixture(scope="module")
def text_encoder(bases: dict[str, Path]) -> TextEncoder:
    return load_text_encoder(bases["original"], "original", torch.float32)


@pytest.fixture(scope="module")
def image_encoder(bases: dict[str, Path]) -> ImageEncoder:
    return load_image_encoder(bases["original"], "original", torch.float32)


def _image(batch: int = 2) -> torch.Tensor:
    return torch.rand(batch, 3, 120, 96, generator=torch.Generator().manual_seed(0)) * 2 - 1


# --- layouts -------------------------------------------------------------------------------------------------------


def test_both_layouts_load_to_the_same_text_encoder(bases: dict[str, Path], text_encoder: TextEncoder) -> None:
    original, diffusers = text_encoder, load_text_encoder(bases["diffusers"], "diffusers", torch.float32)
    a, b = original.network.state_dict(), diffusers.network.state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    for x, y in zip(original.encode(PROMPTS), diffusers.encode(PROMPTS)):
        assert torch.equal(x, y)


def test_both_layouts_load_to_the_same_image_encoder(bases: dict[str, Path], image_encoder: ImageEncoder) -> None:
    original, diffusers = image_encoder, load_image_encoder(bases["diffusers"], "diffusers", torch.float32)
    a, b = original.network.state_dict(), diffusers.network.state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert torch.equal(original.encode(_image()), diffusers.encode(_image()))


def test_layouts_are_the_real_downloads_file_names(bases: dict[str, Path]) -> None:
    original, diffusers = bases["original"], bases["diffusers"]
    assert (original / T5_FILE).is_file() and (original / CLIP_FILE).is_file()
    assert (original / T5_TOKENIZER_DIR / "tokenizer.json").is_file() and (original / "xlm-roberta-large" / "tokenizer.json").is_file()
    assert (diffusers / "text_encoder" / "model.safetensors.index.json").is_file()
    assert len(list((diffusers / "text_encoder").glob("model-*-of-*.safetensors"))) >= 2
    assert (diffusers / "image_encoder" / "model.safetensors").is_file()
    assert (diffusers / "image_processor" / "preprocessor_config.json").is_file()
    stored = torch.load(original / T5_FILE, weights_only=True)
    assert {t.dtype for t in stored.values()} == {torch.bfloat16}
    assert "blocks.1.pos_embedding.embedding.weight" in stored  # UMT5: one position bias per layer


def test_the_embedding_is_one_parameter_under_both_names(bases: dict[str, Path]) -> None:
    network = load_text_encoder(bases["diffusers"], "diffusers", torch.float32).network
    assert network.shared.weight is network.encoder.embed_tokens.weight


# --- converters ----------------------------------------------------------------------------------------------------


def test_t5_converter_maps_every_key_to_the_transformers_model() -> None:
    state = wan_t5_state(vocab=128, dim=TEXT_DIM, seed=SEED)
    converted = convert_wan_t5_to_transformers(state)
    config = umt5_config_from_wan({k: tuple(v.shape) for k, v in state.items()})
    assert (config.num_layers, config.num_heads, config.d_kv, config.d_model, config.vocab_size) == (T5_LAYERS, T5_HEADS, TEXT_DIM // T5_HEADS, TEXT_DIM, 128)
    expected = UMT5EncoderModel(config).state_dict()
    assert converted.keys() == expected.keys()
    assert all(converted[k].shape == expected[k].shape for k in expected)
    # every Wan tensor lands somewhere, unchanged (the embedding twice, tied)
    used = {id(t) for t in converted.values()}
    assert all(id(t) in used for t in state.values())
    assert converted["encoder.block.1.layer.1.DenseReluDense.wi_0.weight"] is state["blocks.1.ffn.gate.0.weight"]
    assert converted["encoder.block.1.layer.1.DenseReluDense.wi_1.weight"] is state["blocks.1.ffn.fc1.weight"]


def test_t5_converter_refuses_unknown_keys() -> None:
    state = wan_t5_state(vocab=128, dim=TEXT_DIM, seed=SEED) | {"blocks.0.attn.extra.weight": torch.zeros(1)}
    with pytest.raises(ValueError, match=r"blocks\.0\.attn\.extra\.weight"):
        convert_wan_t5_to_transformers(state)


def test_clip_converter_maps_every_visual_key_and_splits_qkv() -> None:
    state = wan_clip_state(CLIP_DIM, SEED)
    converted = convert_open_clip_visual_to_transformers(state)
    config = clip_vision_config_from_wan({k: tuple(v.shape) for k, v in state.items()})
    assert (config.num_hidden_layers, config.image_size, config.patch_size, config.hidden_size) == (CLIP_LAYERS, 224, 14, CLIP_DIM)
    expected = CLIPVisionModelWithProjection(config).state_dict()
    assert converted.keys() == expected.keys()
    assert all(converted[k].shape == expected[k].shape for k in expected)
    qkv = state["visual.transformer.1.attn.to_qkv.weight"]
    for i, name in enumerate("qkv"):
        assert torch.equal(converted[f"vision_model.encoder.layers.1.self_attn.{name}_proj.weight"], qkv[i * CLIP_DIM : (i + 1) * CLIP_DIM])
    assert torch.equal(converted["visual_projection.weight"], state["visual.head"].t())


def test_clip_converter_passes_over_the_text_tower_but_not_unknown_visual_keys() -> None:
    state = wan_clip_state(CLIP_DIM, SEED)
    assert any(k.startswith("textual.") for k in state) and not any("textual" in k for k in convert_open_clip_visual_to_transformers(state))
    with pytest.raises(ValueError, match=r"visual\.transformer\.0\.ls_1\.gamma"):
        convert_open_clip_visual_to_transformers(state | {"visual.transformer.0.ls_1.gamma": torch.zeros(CLIP_DIM)})


# --- text encoder outputs ------------------------------------------------------------------------------------------


def test_encode_keeps_each_prompts_own_tokens(text_encoder: TextEncoder) -> None:
    encoder = text_encoder
    outputs = encoder.encode(PROMPTS)
    ids, mask = encoder.tokenize(PROMPTS)
    assert ids.shape == (len(PROMPTS), 512)
    lengths = [int(m.sum()) for m in mask]
    assert [o.shape for o in outputs] == [(n, TEXT_DIM) for n in lengths]
    assert lengths[2] == 512 and ids[2, -1] == encoder.tokenizer.eos_token_id  # truncated, EOS kept
    assert all(ids[i, n - 1] == encoder.tokenizer.eos_token_id for i, n in enumerate(lengths))
    assert len(set(lengths)) == len(lengths)
    # whitespace cleaning and HTML entities, as Wan's tokenizer wrapper
    plain = encoder.encode(["low quality, blurry & static"])[0]
    assert torch.equal(plain, outputs[1])


def test_text_encoder_equals_wan_t5_maths(bases: dict[str, Path], text_encoder: TextEncoder) -> None:
    encoder = text_encoder
    state = {k: v.float() for k, v in torch.load(bases["original"] / T5_FILE, weights_only=True).items()}
    ids, mask = encoder.tokenize(PROMPTS)
    expected = _wan_t5(state, ids, mask)
    for i, got in enumerate(encoder.encode(PROMPTS)):
        torch.testing.assert_close(got, expected[i, : got.shape[0]], atol=1e-4, rtol=1e-4)


def _wan_t5(state: dict[str, torch.Tensor], ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Wan's T5 encoder written out: pre-RMS-norm blocks, unscaled attention plus a per-layer bucketed position bias."""
    x = state["token_embedding.weight"][ids]
    length = ids.shape[1]
    buckets = _t5_buckets(torch.arange(length)[None, :] - torch.arange(length)[:, None])
    for i in range(T5_LAYERS):
        p = f"blocks.{i}."
        h = _rms(x, state[p + "norm1.weight"])
        q, k, v = ((h @ state[p + f"attn.{n}.weight"].t()).unflatten(-1, (T5_HEADS, -1)).transpose(1, 2) for n in "qkv")
        logits = q @ k.transpose(-1, -2) + state[p + "pos_embedding.embedding.weight"][buckets].permute(2, 0, 1)
        logits = logits.masked_fill(mask[:, None, None, :] == 0, torch.finfo(x.dtype).min)
        x = x + (logits.softmax(-1) @ v).transpose(1, 2).flatten(2) @ state[p + "attn.o.weight"].t()
        h = _rms(x, state[p + "norm2.weight"])
        gated = F.gelu(h @ state[p + "ffn.gate.0.weight"].t(), approximate="tanh") * (h @ state[p + "ffn.fc1.weight"].t())
        x = x + gated @ state[p + "ffn.fc2.weight"].t()
    return _rms(x, state["norm.weight"])


def _t5_buckets(relative: torch.Tensor, num_buckets: int = 32, max_distance: int = 128) -> torch.Tensor:
    """Bidirectional T5 buckets: half per direction, exact below a quarter, logarithmic up to max_distance."""
    half = num_buckets // 2
    exact = half // 2
    distance = relative.abs()
    far = exact + (torch.log(distance.clamp(min=1).float() / exact) / math.log(max_distance / exact) * (half - exact)).long()
    return (relative > 0).long() * half + torch.where(distance < exact, distance, far.clamp(max=half - 1))


def _rms(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)


# --- image encoder outputs -----------------------------------------------------------------------------------------


def test_image_encoder_is_the_output_before_the_last_block(bases: dict[str, Path], image_encoder: ImageEncoder) -> None:
    encoder = image_encoder
    state = torch.load(bases["original"] / CLIP_FILE, weights_only=True)
    pixels = F.interpolate(_image(), size=(224, 224), mode="bicubic", align_corners=False)
    pixels = (pixels * 0.5 + 0.5 - torch.tensor(CLIP_MEAN).view(1, 3, 1, 1)) / torch.tensor(CLIP_STD).view(1, 3, 1, 1)
    got = encoder.encode(_image())
    assert got.shape == (2, 257, CLIP_DIM)
    torch.testing.assert_close(got, _wan_vit(state, pixels, blocks=CLIP_LAYERS - 1), atol=1e-4, rtol=1e-4)
    assert not torch.allclose(got, _wan_vit(state, pixels, blocks=CLIP_LAYERS), atol=1e-2)  # the last block really is left out
    with torch.inference_mode():
        torch.testing.assert_close(got, encoder.network(pixel_values=pixels, output_hidden_states=True).hidden_states[-2])


def _wan_vit(state: dict[str, torch.Tensor], pixels: torch.Tensor, blocks: int) -> torch.Tensor:
    """Wan's CLIP vision tower written out: patches + class token + positions, pre-norm, ``blocks`` pre-LN blocks."""
    weight = state["visual.patch_embedding.weight"]
    dim = weight.shape[0]
    x = F.conv2d(pixels, weight, stride=weight.shape[-1]).flatten(2).transpose(1, 2)
    x = torch.cat([state["visual.cls_embedding"].expand(x.shape[0], -1, -1), x], dim=1) + state["visual.pos_embedding"]
    x = _ln(x, state, "visual.pre_norm")
    for i in range(blocks):
        p = f"visual.transformer.{i}."
        h = _ln(x, state, p + "norm1")
        qkv = h @ state[p + "attn.to_qkv.weight"].t() + state[p + "attn.to_qkv.bias"]
        q, k, v = (t.unflatten(-1, (NUM_HEADS, -1)).transpose(1, 2) for t in qkv.chunk(3, dim=-1))
        attended = ((q @ k.transpose(-1, -2)) / math.sqrt(dim // NUM_HEADS)).softmax(-1) @ v
        x = x + attended.transpose(1, 2).flatten(2) @ state[p + "attn.proj.weight"].t() + state[p + "attn.proj.bias"]
        h = _ln(x, state, p + "norm2")
        h = F.gelu(h @ state[p + "mlp.0.weight"].t() + state[p + "mlp.0.bias"])
        x = x + h @ state[p + "mlp.2.weight"].t() + state[p + "mlp.2.bias"]
    return x


def _ln(x: torch.Tensor, state: dict[str, torch.Tensor], name: str) -> torch.Tensor:
    return F.layer_norm(x, x.shape[-1:], state[name + ".weight"], state[name + ".bias"], eps=1e-5)


# --- bad inputs ----------------------------------------------------------------------------------------------------


@pytest.fixture()
def original(bases: dict[str, Path], tmp_path: Path) -> Path:
    """A private copy of the original layout, free to damage."""
    return Path(shutil.copytree(bases["original"], tmp_path / "original"))


def _rewrite(path: Path, change: dict[str, object], drop: str | None = None) -> None:
    state = torch.load(path, weights_only=True)
    state.pop(drop, None)
    torch.save(state | change, path)


def _load_t5(base: Path) -> None:
    load_text_encoder(base, "original", torch.float32)


def _load_clip(base: Path) -> None:
    load_image_encoder(base, "original", torch.float32)


@pytest.mark.parametrize(("file", "load"), [(T5_FILE, _load_t5), (CLIP_FILE, _load_clip)])
def test_missing_pth_names_the_file(original: Path, file: str, load: Callable[[Path], None]) -> None:
    (original / file).unlink()
    with pytest.raises(InputError, match=f"{file}.*not found"):
        load(original)


@pytest.mark.parametrize(("file", "load"), [(T5_FILE, _load_t5), (CLIP_FILE, _load_clip)])
def test_truncated_pth_names_the_file(original: Path, file: str, load: Callable[[Path], None]) -> None:
    path = original / file
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(InputError, match=file):
        load(original)


@pytest.mark.parametrize("content", [[1, 2, 3], {"token_embedding.weight": "not a tensor"}, {"weights": Path("/x")}], ids=["list", "string", "object"])
def test_pth_without_a_dict_of_tensors_names_the_file(original: Path, content: object) -> None:
    torch.save(content, original / T5_FILE)
    with pytest.raises(InputError, match=T5_FILE):
        _load_t5(original)


@pytest.mark.parametrize(
    ("file", "load", "change", "drop", "says"),
    [
        (T5_FILE, _load_t5, {"blocks.1.attn.k.weight": torch.zeros(5, 7, dtype=torch.bfloat16)}, None, "wrong shapes"),
        (T5_FILE, _load_t5, {}, "blocks.1.ffn.fc2.weight", "lack 1 tensors"),
        (T5_FILE, _load_t5, {}, "token_embedding.weight", "lacks tensor"),
        (T5_FILE, _load_t5, {"blocks.0.attn.extra.weight": torch.zeros(1)}, None, "not a Wan UMT5 encoder tensor"),
        (CLIP_FILE, _load_clip, {"visual.transformer.0.mlp.2.weight": torch.zeros(3, 3)}, None, "wrong shapes"),
        (CLIP_FILE, _load_clip, {}, "visual.post_norm.bias", "lack 1 tensors"),
        (CLIP_FILE, _load_clip, {"visual.transformer.0.ls_1.gamma": torch.zeros(CLIP_DIM)}, None, "not a CLIP ViT tensor"),
    ],
    ids=["t5-shape", "t5-missing", "t5-no-embedding", "t5-unknown", "clip-shape", "clip-missing", "clip-unknown"],
)
def test_bad_tensors_name_the_file(original: Path, file: str, load: Callable[[Path], None], change: dict[str, object], drop: str | None, says: str) -> None:
    _rewrite(original / file, change, drop)
    with pytest.raises(InputError, match=f"(?s){file}.*{says}|{says}.*{file}"):
        load(original)


def test_missing_tokenizer_names_the_folder(original: Path) -> None:
    shutil.rmtree(original / T5_TOKENIZER_DIR)
    with pytest.raises(InputError, match="umt5-xxl"):
        _load_t5(original)


def test_diffusers_layout_errors_name_the_file(bases: dict[str, Path], tmp_path: Path) -> None:
    base = Path(shutil.copytree(bases["diffusers"], tmp_path / "diffusers"))
    next((base / "text_encoder").glob("model-00002-*.safetensors")).unlink()
    with pytest.raises(InputError, match="model.safetensors.index.json"):
        load_text_encoder(base, "diffusers", torch.float32)
    config = base / "image_encoder" / "config.json"
    config.write_text(config.read_text().replace('"clip_vision_model"', '"siglip_vision_model"'))
    with pytest.raises(InputError, match=r"image_encoder/config\.json.*siglip"):
        load_image_encoder(base, "diffusers", torch.float32)
