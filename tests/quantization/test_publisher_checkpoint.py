"""The publisher's quantized InfiniteTalk DiT (optimum-quanto's format, as MeiGen-AI ships it) read as it is.

The files are written by optimum-quanto itself from the tiny golden sets' weights (``quanto_checkpoint.py``); quanto
also reads them back as the oracle of what each layer's weight is.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from optimum.quanto import requantize
from quanto_checkpoint import merged_dit, skeleton, write_quanto_dit
from torch import nn

import avatarstream
from avatarstream.errors import InputError
from avatarstream.families.infinitetalk.family import InfiniteTalkFamily
from avatarstream.families.infinitetalk.layout import WeightsLayout, resolve
from avatarstream.families.infinitetalk.load_quantized_dit import network_key
from avatarstream.families.infinitetalk.networks import InfiniteTalkNetworks, QuantizedDiT
from avatarstream.families.infinitetalk.options import InfiniteTalkOptions
from avatarstream.families.infinitetalk.parity import render_arguments
from avatarstream.parity.fixture import GoldenSet
from avatarstream.parity.video import frame_checks, golden_frames
from avatarstream.runtime.quantize import is_quantized
from avatarstream.weights.files import read_safetensors

FIXTURES = Path(__file__).parents[1] / "fixtures"
CPU = torch.device("cpu")


@pytest.mark.parametrize("mode", ["fp8", "int8"])
def test_every_layer_holds_the_values_and_scales_quanto_reads_from_the_file(mode: str, tmp_path: Path) -> None:
    layout = resolve(GoldenSet.open(FIXTURES / "infinitetalk-tiny").weights)
    path = write_quanto_dit(layout.base, layout.adapter, tmp_path, mode)
    oracle = skeleton(merged_dit(layout.base, layout.adapter))
    requantize(oracle, read_safetensors(path), json.loads(path.with_suffix(".json").read_text()), device=CPU)
    dit = InfiniteTalkNetworks.load(layout, torch.float32, encoders=False, quantized_dit=QuantizedDiT(path, CPU)).dit
    ours = dict(dit.named_parameters())
    linears = {name: m for name, m in oracle.named_modules() if isinstance(m, nn.Linear)}
    assert len(linears) == 42
    for name, module in linears.items():
        weight = ours[network_key(name + ".weight")]
        assert is_quantized(weight) and weight.dtype == torch.float32
        # quanto dequantizes in the file's bf16: value x scale rounded once, as ours is when cast there
        assert torch.equal(weight.dequantize().to(torch.bfloat16), module.weight.dequantize()), name
    plain = {k: v for k, v in oracle.state_dict().items() if not k.rpartition(".")[0] in linears and not k.endswith(("_scale", "_data"))}
    assert plain and all(torch.equal(ours[network_key(k)], v.float()) for k, v in plain.items())


def test_the_publishers_fp8_dit_renders_the_whole_video_set_within_its_psnr_bound(tmp_path: Path) -> None:
    gs = GoldenSet.open(FIXTURES / "infinitetalk-video")
    layout = resolve(gs.weights)
    arguments = render_arguments(gs)
    quantized_dit = write_quanto_dit(layout.base, layout.adapter, tmp_path / "quant_models", "fp8")
    arguments["model_options"] = {**arguments["model_options"], "quantized_dit": quantized_dit, "quantize": "fp8"}
    result = avatarstream.render(out=None, frames=tmp_path / "frames", threads=1, **arguments)
    assert f"{quantized_dit} (the publisher's quantized DiT)" in result.report["weights"]
    assert result.report["weights"].endswith("quantized: fp8 weights (weight-only): dit (as published), text_encoder")
    checks = {c.name: c for c in frame_checks(gs, tmp_path / "frames", golden_frames(gs))}
    # 34.7 dB measured (torchao's fp8 of the full-precision weights: 35.8; the file holds bf16-rounded weights)
    assert 32 < checks["psnr_db"].max_abs_err < 40


@pytest.fixture(scope="module")
def fp8_file(tiny_original: WeightsLayout, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A tiny checkpoint's weights root and its DiT as the publisher's fp8 file."""
    return tiny_original.base.parent, write_quanto_dit(tiny_original.base, tiny_original.adapter, tmp_path_factory.mktemp("quant_models"), "fp8")


def _load(root: Path, quantized_dit: Path, **options: object) -> InfiniteTalkFamily:
    return InfiniteTalkFamily.load(root, InfiniteTalkOptions(quantized_dit=quantized_dit, **options))  # type: ignore[arg-type]


def test_the_dit_is_not_quantized_twice(fp8_file: tuple[Path, Path]) -> None:
    root, path = fp8_file
    with pytest.raises(InputError, match="dit comes quantized from the publisher's file already; leave it out of --quantize-modules"):
        _load(root, path, quantize="int8", quantize_modules="dit")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda m: m.update({"blocks.0.ffn.0": {"weights": "qfloat8_e4m3fn", "activations": "qfloat8_e4m3fn"}}), "quantizes the activations of 'blocks.0.ffn.0'"),
        (lambda m: m.update({"blocks.0.ffn.0": {"weights": "qint4", "activations": "none"}}), "quantizes 'blocks.0.ffn.0' to qint4"),
        (lambda m: m.update({"blocks.0.ffn.0": {"weights": "qint8", "activations": "none"}}), "mixes fp8 and int8 layers"),
        (lambda m: m.pop("head.head"), r"holds quantized values its map .* does not name \(head.head.weight._data"),
        (lambda m: m.update({"blocks.0.norm3": {"weights": "qfloat8_e4m3fn", "activations": "none"}}), "lacks blocks.0.norm3.weight._data"),
        (lambda m: m.update({"blocks.0": "fp8"}), r"the entry of 'blocks.0' is not \{weights, activations\}"),
    ],
)
def test_a_map_that_does_not_fit_is_one_clear_error(fp8_file: tuple[Path, Path], tmp_path: Path, change: object, message: str) -> None:
    root, path = fp8_file
    copy = tmp_path / path.name
    copy.write_bytes(path.read_bytes())
    quantization_map = json.loads(path.with_suffix(".json").read_text())
    change(quantization_map)  # type: ignore[operator]
    copy.with_suffix(".json").write_text(json.dumps(quantization_map))
    with pytest.raises(InputError, match=message):
        _load(root, copy)


def test_a_file_without_its_map_says_where_the_map_belongs(fp8_file: tuple[Path, Path], tmp_path: Path) -> None:
    root, path = fp8_file
    copy = tmp_path / path.name
    copy.write_bytes(path.read_bytes())
    with pytest.raises(InputError, match=f"quantization map {tmp_path / 'infinitetalk_single_fp8.json'} not found"):
        _load(root, copy)
