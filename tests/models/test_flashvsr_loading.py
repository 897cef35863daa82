"""Loading FlashVSR's files: sizes recognised from shapes (the real download has no config), dtypes, bad folders, options, tiny checkpoint."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from avatarstream.components.wan.layout import random_mark
from avatarstream.errors import InputError
from avatarstream.families.flashvsr.layout import CONFIG_FILE, DIT_FILE, LQ_PROJ_FILE, PROMPT_FILE, TCDECODER_FILE, VAE_FILE, resolve
from avatarstream.families.flashvsr.load import dit_config
from avatarstream.families.flashvsr.networks import FlashVSRNetworks
from avatarstream.families.flashvsr.options import FlashVSROptions
from avatarstream.families.flashvsr.tiny import write_tiny_checkpoint
from avatarstream.models.flashvsr.config import DiTConfig, LQProjConfig, TCDecoderConfig
from avatarstream.models.flashvsr.dit import FlashVSRDiT
from avatarstream.models.flashvsr.lq_proj import LQProjection
from avatarstream.models.flashvsr.tcdecoder import TCDecoder

GOLDEN = Path(__file__).parents[1] / "fixtures" / "flashvsr-tiny"
WEIGHTS = GOLDEN / "weights" / "FlashVSR"
SPEC = json.loads((GOLDEN / "golden.json").read_text())


def meta_shapes(network: torch.nn.Module) -> dict[str, tuple[int, ...]]:
    return {k: tuple(v.shape) for k, v in network.state_dict().items()}


def parameters(network: torch.nn.Module) -> int:
    return sum(p.numel() for p in network.parameters())


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    copy = tmp_path / "FlashVSR"
    shutil.copytree(WEIGHTS, copy)
    return copy


def test_the_real_sizes_are_recognised_from_the_shapes_alone() -> None:
    real = SPEC["config"]["real"]
    with torch.device("meta"):
        dit, lq, tcd = FlashVSRDiT(DiTConfig()), LQProjection(LQProjConfig()), TCDecoder(TCDecoderConfig())
    config = DiTConfig.from_shapes(meta_shapes(dit))
    assert {k: getattr(config, k) for k in ("dim", "num_heads", "num_layers", "ffn_dim", "text_dim", "freq_dim", "in_dim", "out_dim")} == {
        k: real["dit"][k] for k in ("dim", "num_heads", "num_layers", "ffn_dim", "text_dim", "freq_dim", "in_dim", "out_dim")
    }
    assert (LQProjConfig.from_shapes(meta_shapes(lq)).hidden_dim1, LQProjConfig.from_shapes(meta_shapes(lq)).hidden_dim2) == tuple(real["lq_hidden"])
    assert TCDecoderConfig.from_shapes(meta_shapes(tcd)).channels == tuple(real["tcd_channels"])
    # the parameter counts the golden set's README states for the real networks
    assert (parameters(dit), parameters(lq), parameters(tcd)) == (1_418_996_800, 287_845_888, 45_338_371)


def test_the_tiny_dit_sizes_come_from_its_config_json() -> None:
    config = dit_config(WEIGHTS / DIT_FILE, WEIGHTS / CONFIG_FILE)
    assert (config.dim, config.num_heads, config.num_layers, config.ffn_dim, config.text_dim) == (64, 2, 2, 128, 32)


def test_without_config_json_a_dit_of_odd_head_width_asks_for_one(folder: Path) -> None:
    (folder / CONFIG_FILE).unlink()
    with pytest.raises(InputError, match="config.json with num_heads"):
        FlashVSRNetworks.load(resolve(folder))


@pytest.mark.parametrize("name", [DIT_FILE, LQ_PROJ_FILE, TCDECODER_FILE, PROMPT_FILE])
def test_a_missing_file_is_named_with_where_to_get_it(folder: Path, name: str) -> None:
    (folder / name).unlink()
    source = "github.com/OpenImagingLab/FlashVSR" if name == PROMPT_FILE else "huggingface.co/JunhaoZhuang/FlashVSR"
    with pytest.raises(InputError, match=f"lacks {name} \\(from {source}"):
        resolve(folder)


def test_full_mode_needs_the_wan_vae(folder: Path) -> None:
    (folder / TCDECODER_FILE).unlink()
    assert resolve(folder, "full").decoder.name == VAE_FILE
    (folder / VAE_FILE).unlink()
    with pytest.raises(InputError, match=VAE_FILE):
        resolve(folder, "full")
    with pytest.raises(InputError, match="weights folder .* not found"):
        resolve(folder / "nowhere")


def test_a_file_of_another_model_is_refused_by_name(folder: Path) -> None:
    shutil.copy(folder / LQ_PROJ_FILE, folder / TCDECODER_FILE)
    with pytest.raises(InputError, match=f"{TCDECODER_FILE} has no decoder.1.weight .*not FlashVSR's TCDecoder"):
        FlashVSRNetworks.load(resolve(folder))


def test_a_dit_in_other_key_names_is_refused(folder: Path) -> None:
    state = load_file(folder / DIT_FILE)
    save_file({k.replace(".ffn.0.", ".ffn.net.0.proj."): v for k, v in state.items()}, str(folder / DIT_FILE))
    (folder / CONFIG_FILE).unlink()
    with pytest.raises(InputError, match="has no blocks.0.ffn.0.weight"):
        FlashVSRNetworks.load(resolve(folder))


def test_a_config_larger_than_the_machine_is_refused_before_anything_is_allocated(folder: Path) -> None:
    config = json.loads((folder / CONFIG_FILE).read_text())
    (folder / CONFIG_FILE).write_text(json.dumps({**config, "dim": 65536, "num_heads": 512, "num_layers": 64, "ffn_dim": 65536}))
    with pytest.raises(InputError, match="more than this machine's"):
        FlashVSRNetworks.load(resolve(folder))


def test_bf16_files_load_into_any_dtype(folder: Path) -> None:
    state = load_file(folder / DIT_FILE)
    save_file({k: v.to(torch.bfloat16) for k, v in state.items()}, str(folder / DIT_FILE))
    for name in (LQ_PROJ_FILE, TCDECODER_FILE):
        torch.save({k: v.to(torch.bfloat16) for k, v in torch.load(folder / name, weights_only=True).items()}, folder / name)
    as_fp32 = FlashVSRNetworks.load(resolve(folder), torch.float32)
    assert {p.dtype for p in as_fp32.dit.parameters()} == {torch.float32}
    assert torch.equal(as_fp32.dit.blocks[0].self_attn.q.weight, state["blocks.0.self_attn.q.weight"].to(torch.bfloat16).float())
    as_bf16 = FlashVSRNetworks.load(resolve(WEIGHTS), torch.bfloat16)
    assert {p.dtype for n in (as_bf16.dit, as_bf16.lq_proj, as_bf16.decoder) for p in n.parameters()} == {torch.bfloat16}
    assert as_bf16.prompt.dtype == torch.bfloat16


def test_the_tiny_checkpoint_loads_in_both_modes(tmp_path: Path) -> None:
    folder = write_tiny_checkpoint(tmp_path / "FlashVSR", seed=3)
    assert random_mark(folder / DIT_FILE) is not None
    assert FlashVSRNetworks.load(resolve(folder, "tiny")).mode == "tiny"
    assert FlashVSRNetworks.load(resolve(folder, "full")).mode == "full"


def test_options_have_bounds_defaults_and_no_torch_import() -> None:
    options = FlashVSROptions.parse({"mode": "full", "kv_ratio": 4})
    assert options.decoder_mode == "full"
    assert dataclasses.asdict(options.settings()) == {"sparse_ratio": 2.0, "local_range": 11, "kv_ratio": 4, "color_fix": True}
    assert FlashVSROptions().decoder_mode == "tiny"
    for bad in ({"sparse_ratio": 0.0}, {"local_range": 0}, {"mode": "huge"}, {"kv_ratio": 1.5}):
        with pytest.raises(InputError):
            FlashVSROptions.parse(bad)
    code = "import sys, avatarstream.families.flashvsr.options, avatarstream.families.flashvsr.layout; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"
