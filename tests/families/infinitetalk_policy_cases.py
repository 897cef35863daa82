"""The tiny InfiniteTalk networks run once under a residency policy: shared by the in-process and torchrun tests."""

from __future__ import annotations

from pathlib import Path

import torch

from avatarstream.components.wan.vae import DecoderCache, decode
from avatarstream.families.infinitetalk.layout import resolve
from avatarstream.families.infinitetalk.networks import InfiniteTalkNetworks
from avatarstream.models.infinitetalk.audio_features import wav2vec2_features
from avatarstream.runtime.module import Module
from avatarstream.runtime.residency import Runtime

GOLDEN_WEIGHTS = Path(__file__).parents[1] / "fixtures" / "infinitetalk-tiny" / "weights"


def inputs(networks: InfiniteTalkNetworks) -> dict[str, tuple[torch.Tensor, ...]]:
    g = torch.Generator().manual_seed(0)
    dit = networks.dit.config
    audio = networks.audio_encoder.config
    frames = 3
    return {
        "dit": (
            torch.randn(2, dit.out_dim, frames, 6, 8, generator=g),
            torch.randn(2, dit.in_dim - dit.out_dim, frames, 6, 8, generator=g),
            torch.tensor([900.0, 300.0]),
            torch.randn(2, 7, dit.text_dim, generator=g),
            torch.randn(2, 257, dit.clip_dim, generator=g),
            torch.randn(2, 1 + 4 * (frames - 1), 5, audio.num_hidden_layers, audio.hidden_size, generator=g),
        ),
        "vae": (torch.randn(1, 16, frames, 4, 4, generator=g),),
        "audio_encoder": (torch.randn(16000, generator=g) * 0.1,),
    }


def run(networks: InfiniteTalkNetworks, network: str, policy: str) -> torch.Tensor:
    """One call of ``network`` with its weights placed by ``policy`` (the runtime acquires and releases them)."""
    module = Module(network, getattr(networks, network))
    runtime = Runtime(torch.device("cpu"), {network: policy})
    runtime.bind([module])
    args = inputs(networks)[network]
    outputs = []
    with torch.inference_mode():
        for _ in range(2):  # twice: weights released after the first call come back for the second
            runtime.acquire([module])
            if network == "dit":
                outputs.append(module.network(*args))
            elif network == "vae":
                outputs.append(decode(module.network, args[0], DecoderCache.for_vae(module.network)))
            else:
                outputs.append(wav2vec2_features(module.network, args[0]))
            runtime.release([module])
    runtime.close()
    assert torch.equal(outputs[0], outputs[1])
    return outputs[0]


def load(root: Path = GOLDEN_WEIGHTS) -> InfiniteTalkNetworks:
    return InfiniteTalkNetworks.load(resolve(root), encoders=False)
