"""The publisher's quantized InfiniteTalk DiT (optimum-quanto's format, as MeiGen-AI ships it) read as it is.

The files are written by optimum-quanto itself from the tiny golden sets' weights (``quanto_checkpoint.py``); quanto
also reads them back as the oracle of what each layer's weight is.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from optimum.quanto import requantize
from quanto_checkpoint import T5_EMBEDDINGS, merged_dit, skeleton, t5_state, write_quanto_dit, write_quanto_t5
from safetensors.torch import save_file
from torch import nn

import avatarstream
from avatarstream.components.wan.layout import T5_FILE
from avatarstream.components.wan.load_text_encoder import load_quantized_text_encoder
from avatarstream.components.wan.text_encoder import convert_wan_t5_to_transformers
from avatarstream.errors import InputError
from avatarstream.families.infinitetalk.family import InfiniteTalkFamily
from avatarstream.families.infinitetalk.layout import WeightsLayout, resolve
from avatarstream.families.infinitetalk.load_quantized_dit import network_key
from avatarstream.families.infinitetalk.networks import InfiniteTalkNetworks
from avatarstream.families.infinitetalk.options import InfiniteTalkOptions
from avatarstream.families.infinitetalk.parity import render_arguments
from avatarstream.families.infinitetalk.published import Published
from avatarstream.parity.fixture import GoldenSet
from avatarstream.parity.video import frame_checks, golden_frames
from avatarstream.runtime.quantize import is_quantized
from avatarstream.weights.files import read_safetensors

FIXTURES = Path(__file__).parents[1] / "fixtures"
CPU = torch.device("cpu")
FUZZ = settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def _assert_holds_what_quanto_reads(path: Path, map_path: Path, oracle: nn.Module, ours: Mapping[str, torch.Tensor], name_of: Callable[[str], str]) -> None:
    """Each linear layer of ``oracle`` (quanto reads ``path`` into it) equals ours, and so does every other tensor."""
    requantize(oracle, read_safetensors(path), json.loads(map_path.read_text()), device=CPU)
    linears = {name: m for name, m in oracle.named_modules() if isinstance(m, nn.Linear)}
    assert linears
    for name, module in linears.items():
        weight = ours[name_of(name + ".weight")]
        assert is_quantized(weight) and weight.dtype == torch.float32
        # quanto dequantizes in the file's bf16: value x scale rounded once, as ours is when cast there
        assert torch.equal(weight.dequantize().to(torch.bfloat16), module.weight.dequantize()), name
    plain = {k: v for k, v in oracle.state_dict().items() if k.rpartition(".")[0] not in linears and not k.endswith(("_scale", "_data"))}
    assert plain and all(torch.equal(ours[name_of(k)], v.float()) for k, v in plain.items())


@pytest.mark.parametrize("mode", ["fp8", "int8"])
def test_every_dit_layer_holds_the_values_and_scales_quanto_reads_from_the_file(mode: str, tmp_path: Path) -> None:
    layout = resolve(GoldenSet.open(FIXTURES / "infinitetalk-tiny").weights)
    path = write_quanto_dit(layout.base, layout.adapter, tmp_path, mode)
    dit = InfiniteTalkNetworks.load(layout, torch.float32, encoders=False, published=Published(path, None, CPU)).dit
    oracle = skeleton(merged_dit(layout.base, layout.adapter))
    _assert_holds_what_quanto_reads(path, path.with_suffix(".json"), oracle, dict(dit.named_parameters()), network_key)
    assert sum(isinstance(m, nn.Linear) for m in oracle.modules()) == 42


def test_the_text_encoder_holds_what_quanto_reads_from_the_publishers_t5_file(tiny_original: WeightsLayout, tmp_path: Path) -> None:
    pth = tiny_original.base / T5_FILE
    path = write_quanto_t5(pth, tmp_path, "fp8")
    encoder = load_quantized_text_encoder(tiny_original.base, "original", path, tmp_path / "t5_map_fp8.json", torch.float32, CPU)
    ours = dict(encoder.network.named_parameters(remove_duplicate=False))
    oracle = skeleton(t5_state(pth), T5_EMBEDDINGS)
    _assert_holds_what_quanto_reads(
        path, tmp_path / "t5_map_fp8.json", oracle, ours, lambda key: next(iter(convert_wan_t5_to_transformers({key: torch.empty(0)})))
    )


def test_the_publishers_fp8_dit_renders_the_whole_video_set_within_its_psnr_bound(tmp_path: Path) -> None:
    gs = GoldenSet.open(FIXTURES / "infinitetalk-video")
    layout = resolve(gs.weights)
    arguments = render_arguments(gs)
    quantized_dit = write_quanto_dit(layout.base, layout.adapter, tmp_path / "quant_models", "fp8")
    arguments["model_options"] = {**arguments["model_options"], "quantized_dit": quantized_dit, "quantize": "fp8"}
    result = avatarstream.render(out=None, frames=tmp_path / "frames", threads=1, **arguments)
    assert f"{quantized_dit} (the publisher's quantized DiT)" in result.report["weights"]
    assert result.report["weights"].endswith("quantized: fp8 weights (weight-only): dit (as published), text_encoder")
    golden = golden_frames(gs)
    assert golden is not None
    checks = {c.name: c for c in frame_checks(gs, tmp_path / "frames", golden)}
    # 34.7 dB measured (torchao's fp8 of the full-precision weights: 35.8; the file holds bf16-rounded weights)
    assert 32 < checks["psnr_db"].max_abs_err < 40


@pytest.fixture(scope="module")
def fp8_file(tiny_original: WeightsLayout, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A tiny checkpoint's weights root, and its DiT and UMT5 as the publisher's fp8 files (in one folder, as published)."""
    folder = tmp_path_factory.mktemp("quant_models")
    write_quanto_t5(tiny_original.base / T5_FILE, folder, "fp8")
    return tiny_original.base.parent, write_quanto_dit(tiny_original.base, tiny_original.adapter, folder, "fp8")


def _load(root: Path, quantized_dit: Path, **options: object) -> InfiniteTalkFamily:
    return InfiniteTalkFamily.load(root, InfiniteTalkOptions(quantized_dit=quantized_dit, **options))  # type: ignore[arg-type]


def test_quantize_reads_the_text_encoder_of_its_mode_beside_the_dit_and_quantizes_it_otherwise(fp8_file: tuple[Path, Path]) -> None:
    root, path = fp8_file
    weights = _load(root, path, quantize="fp8").weights
    assert f"{path} (the publisher's quantized DiT), {path.parent / 't5_fp8.safetensors'} (its quantized UMT5)" in weights
    assert weights.endswith("quantized: fp8 weights (weight-only): dit (as published), text_encoder (as published)")
    weights = _load(root, path, quantize="int8").weights  # the publisher ships no t5_int8
    assert "UMT5" not in weights and weights.endswith("quantized: fp8 weights (weight-only): dit (as published); int8 weights (weight-only): text_encoder")
    assert _load(root, path).weights.endswith("quantized: fp8 weights (weight-only): dit (as published)")


def test_the_adapter_download_is_not_needed_beside_the_publishers_dit(fp8_file: tuple[Path, Path], tiny_original: WeightsLayout, tmp_path: Path) -> None:
    _, path = fp8_file
    root = tmp_path / "weights"  # the base and wav2vec2 only: no InfiniteTalk/single/
    shutil.copytree(tiny_original.base, root / tiny_original.base.name)
    shutil.copytree(tiny_original.audio_encoder, root / tiny_original.audio_encoder.name)
    assert f"{path} (the publisher's quantized DiT)" in _load(root, path).weights
    with pytest.raises(InputError, match=f"quantized DiT {tmp_path / 'missing.safetensors'} not found"):
        _load(root, tmp_path / "missing.safetensors")


def test_a_module_that_came_quantized_is_not_quantized_again(fp8_file: tuple[Path, Path]) -> None:
    root, path = fp8_file
    assert _load(root, path, quantize="fp8", quantize_modules="dit").weights.endswith("quantized: fp8 weights (weight-only): dit (as published)")
    with pytest.raises(InputError, match="dit comes fp8 from the publisher's file, so --quantize int8 cannot apply to it; leave it out of --quantize-modules"):
        _load(root, path, quantize="int8", quantize_modules="dit")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda m: m.update({"blocks.0.ffn.0": {"weights": "qfloat8_e4m3fn", "activations": "qfloat8_e4m3fn"}}),
            "quantizes the activations of 'blocks.0.ffn.0'",
        ),
        (lambda m: m.update({"blocks.0.ffn.0": {"weights": "qint4", "activations": "none"}}), "quantizes 'blocks.0.ffn.0' to qint4"),
        (lambda m: m.update({"blocks.0.ffn.0": {"weights": "qint8", "activations": "none"}}), "mixes fp8 and int8 layers"),
        (lambda m: m.pop("head.head"), r"holds quantized values its map .* does not name \(head.head.weight._data"),
        (lambda m: m.update({"blocks.0.norm3": {"weights": "qfloat8_e4m3fn", "activations": "none"}}), "lacks blocks.0.norm3.weight._data"),
        (lambda m: m.update({"blocks.0": "fp8"}), r"the entry of 'blocks.0' is not \{weights, activations\}"),
    ],
)
def test_a_map_that_does_not_fit_is_one_clear_error(fp8_file: tuple[Path, Path], tmp_path: Path, change: Callable[[dict], object], message: str) -> None:
    root, path = fp8_file
    copy = tmp_path / path.name
    copy.write_bytes(path.read_bytes())
    quantization_map = json.loads(path.with_suffix(".json").read_text())
    change(quantization_map)
    copy.with_suffix(".json").write_text(json.dumps(quantization_map))
    with pytest.raises(InputError, match=message):
        _load(root, copy)


def test_a_file_without_its_map_says_where_the_map_belongs(fp8_file: tuple[Path, Path], tmp_path: Path) -> None:
    root, path = fp8_file
    copy = tmp_path / path.name
    copy.write_bytes(path.read_bytes())
    with pytest.raises(InputError, match=f"quantization map {tmp_path / 'infinitetalk_single_fp8.json'} not found"):
        _load(root, copy)


MAP_ENTRY = st.one_of(
    st.none(),
    st.integers(-2, 2),
    st.text(max_size=8),
    st.dictionaries(
        st.sampled_from(["weights", "activations", "other"]),
        st.one_of(st.sampled_from(["qint8", "qfloat8_e4m3fn", "qint4", "none", ""]), st.integers(), st.none()),
        max_size=3,
    ),
)
TENSORS = st.sampled_from(
    [
        torch.full((8, 1), float("nan")),
        torch.ones(8, 1, dtype=torch.int8),
        torch.ones(3, 1),
        torch.ones(8, 1, 1),
        torch.ones(8, 8, dtype=torch.int8),
        torch.ones(8, 8),
        torch.ones(0),
    ]
)


@given(
    edits=st.dictionaries(
        st.sampled_from(["blocks.0.self_attn.q", "head.head", "blocks.0.norm3", "patch_embedding", "extra"]), MAP_ENTRY, min_size=1, max_size=3
    )
)
@FUZZ
def test_any_map_loads_or_is_one_input_error(fp8_file: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory, edits: dict[str, object]) -> None:
    root, path = fp8_file
    copy = tmp_path_factory.mktemp("map") / path.name
    shutil.copy(path, copy)
    copy.with_suffix(".json").write_text(json.dumps({**json.loads(path.with_suffix(".json").read_text()), **edits}))
    _loads_or_refuses(root, copy)


@given(key=st.sampled_from(["blocks.0.self_attn.q.weight._data", "blocks.0.self_attn.q.weight._scale", "head.head.weight._scale"]), tensor=TENSORS)
@FUZZ
def test_any_values_or_scales_load_or_are_one_input_error(
    fp8_file: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory, key: str, tensor: torch.Tensor
) -> None:
    root, path = fp8_file
    copy = tmp_path_factory.mktemp("tensors") / path.name
    save_file({**read_safetensors(path), key: tensor}, str(copy))
    shutil.copy(path.with_suffix(".json"), copy.with_suffix(".json"))
    _loads_or_refuses(root, copy)


def _loads_or_refuses(root: Path, path: Path) -> None:
    """A family from ``path``, or one InputError; anything else is a bug."""
    try:
        _load(root, path)
    except InputError:
        pass
