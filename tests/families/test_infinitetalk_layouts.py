"""The tiny checkpoint maker writes both download layouts; both load to the same networks with the same outputs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import torch

from avatarstream.families.infinitetalk.layout import WeightsLayout
from avatarstream.families.infinitetalk.networks import InfiniteTalkNetworks

ROOT = Path(__file__).parents[2]


def _state(networks: InfiniteTalkNetworks) -> dict[str, dict[str, torch.Tensor]]:
    assert networks.text_encoder is not None and networks.image_encoder is not None
    parts = {
        "dit": networks.dit, "vae": networks.vae, "audio_encoder": networks.audio_encoder,
        "text_encoder": networks.text_encoder.network, "image_encoder": networks.image_encoder.network,
    }  # fmt: skip
    return {name: network.state_dict() for name, network in parts.items()}


def test_both_layouts_load_identical_networks(tiny_original: WeightsLayout, tiny_diffusers: WeightsLayout) -> None:
    assert tiny_original.layout == "original" and tiny_diffusers.layout == "diffusers"
    a, b = (_state(InfiniteTalkNetworks.load(layout)) for layout in (tiny_original, tiny_diffusers))
    for name in a:
        assert a[name].keys() == b[name].keys(), name
        different = [k for k in a[name] if not torch.equal(a[name][k], b[name][k])]
        assert not different, (name, different[:3])


def test_layouts_are_the_download_layouts(tiny_original: WeightsLayout, tiny_diffusers: WeightsLayout) -> None:
    original = {str(p.relative_to(tiny_original.base)) for p in tiny_original.base.rglob("*") if p.is_file()}
    assert {"config.json", "Wan2.1_VAE.pth", "diffusion_pytorch_model.safetensors.index.json", "models_t5_umt5-xxl-enc-bf16.pth",
            "models_clip_open-clip-xlm-roberta-large-vit-huge-14.pth"} <= original  # fmt: skip
    assert any(p.startswith("google/umt5-xxl/") for p in original) and any(p.startswith("xlm-roberta-large/") for p in original)
    diffusers = {p.relative_to(tiny_diffusers.base).parts[0] for p in tiny_diffusers.base.rglob("*") if p.is_file()}
    assert {"model_index.json", "transformer", "vae", "text_encoder", "tokenizer", "image_encoder", "image_processor"} <= diffusers
    assert tiny_original.adapter.relative_to(tiny_original.base.parent) == Path("InfiniteTalk/single/infinitetalk.safetensors")


def test_encoders_run_on_the_tiny_checkpoint(tiny_original: WeightsLayout) -> None:
    networks = InfiniteTalkNetworks.load(tiny_original)
    assert networks.text_encoder is not None and networks.image_encoder is not None
    with torch.inference_mode():
        (text,) = networks.text_encoder.encode(["a person talks to the camera"])
        image = networks.image_encoder.encode(torch.zeros(1, 3, 48, 64))
    assert text.shape[1] == networks.dit.config.text_dim and 1 < text.shape[0] < 512
    assert image.shape == (1, 257, networks.dit.config.clip_dim)


def test_the_script_writes_a_loadable_checkpoint(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "make_tiny_checkpoint.py"), "--layout", "diffusers", "--shards", "3", str(tmp_path)],
                          check=False, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "Wan2.1-I2V-14B-480P-Diffusers" / "transformer" / "diffusion_pytorch_model-00003-of-00003.safetensors").is_file()
    from avatarstream.families.infinitetalk.layout import resolve

    assert InfiniteTalkNetworks.load(resolve(tmp_path)).dit.config.num_layers == 2
