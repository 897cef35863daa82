"""What the parallel tests run, in one process (the reference) and under torchrun (``parallel_worker.py``).

Three families at test size: demo-tiny with more blocks and four heads (so sp=4
splits its heads), the tiny InfiniteTalk checkpoint with text and audio
guidance on (three predictions per step, for cfg), and the tiny LiveAvatar
checkpoint (4 steps, for steps=4; 2 steps as ``liveavatar-2steps``, for steps=2,sp=2) with one block per cache, so the sink is
refreshed from the first generated latents after the first block. Each case
gives one forward of its DiT (a step's guided velocity for InfiniteTalk,
through the module's ``predictions`` like the stage; none for LiveAvatar,
whose forward needs its caches) and a short render.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from helpers import RATE, REFERENCE, deep_config, speech

from avatarstream.families.assemble import build_pipeline
from avatarstream.families.base import Family
from avatarstream.families.demo import DemoFamily
from avatarstream.families.registry import load_family
from avatarstream.models.infinitetalk.dit import InfiniteTalkDiT
from avatarstream.models.infinitetalk.predict import ChunkConditions, DiTPredictor
from avatarstream.models.infinitetalk.sampler import Guidance
from avatarstream.models.liveavatar.dit import S2VDiT
from avatarstream.pipeline.pipeline import Pipeline
from avatarstream.runtime.launch import torchrun_command
from avatarstream.runtime.parallel.groups import ParallelGroups
from avatarstream.runtime.parallel.guidance import GuidedPredictions
from avatarstream.sources.pcm import PcmBlock

SECONDS = 1.5
IT_OPTIONS = {"preset": "flashtalk", "size": (64, 48), "steps": 2, "text_guidance": 5.0, "audio_guidance": 4.0}
IT_GUIDANCE = Guidance(5.0, 4.0)
LA_OPTIONS = {"size": (64, 64), "cache_blocks": 1, "audio_window_s": 1.0, "audio_lookahead": 4}
HERE = Path(__file__).parent


def launch(nproc: int, out: Path, weights: Path, cases: list[str]) -> None:
    """``parallel_worker.py`` under torchrun with ``nproc`` gloo processes, one thread each."""
    env = {k: v for k, v in os.environ.items() if k not in ("LOCAL_RANK", "RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")]))
    env["OMP_NUM_THREADS"] = "1"
    command = torchrun_command(nproc, [str(out), str(weights), *cases], module="parallel_worker")
    done = subprocess.run(command, env=env, check=False, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def demo_family() -> DemoFamily:
    cfg = deep_config()
    cfg = dataclasses.replace(cfg, dit=dataclasses.replace(cfg.dit, heads=4))
    return DemoFamily.random(cfg, seed=3)


def family(name: str, weights: Path | None) -> Family:
    """``demo``, ``infinitetalk`` or ``liveavatar``; a ``-sharded`` suffix (see ``pipeline``) loads the same family."""
    if name.startswith("demo"):
        return demo_family()
    return load_family("liveavatar" if name.startswith("liveavatar") else "infinitetalk", weights)


def pipeline(fam: Family, name: str = "", parallel: ParallelGroups | None = None) -> Pipeline:
    """The case's pipeline; ``NAME-sharded`` puts the split DiT under FSDP2 too (sharded over each sequence-parallel group),
    ``liveavatar-2steps`` samples in 2 steps (so steps=2 has a rank per step)."""
    options = options_of(fam, name)
    dit = "a2v_dit" if fam.name == "demo" else "dit"
    built = build_pipeline(fam, torch.device("cpu"), options, residency={dit: "sharded"} if name.endswith("-sharded") else None, parallel=parallel)
    built.prepare()
    return built


def forward(fam: Family, built: Pipeline) -> torch.Tensor | None:
    """One forward of the family's DiT on fixed inputs (InfiniteTalk: the guided velocity of one step; LiveAvatar: none)."""
    if fam.name == "liveavatar":
        return None
    g = torch.Generator().manual_seed(5)
    with torch.inference_mode():
        if isinstance(fam, DemoFamily):
            cfg = fam.config
            c, frames, size = cfg.vae.latent_channels, 5, cfg.base_latent_size
            tokens = (size // cfg.dit.patch_size) ** 2
            inputs = (
                torch.randn(1, c, frames, size, size, generator=g),
                torch.randn(1, c, frames, size, size, generator=g),
                torch.tensor([[1.0, 1.0, 0.0, 0.0, 0.0]]),
                torch.tensor([0.6]),
                torch.randn(1, frames, cfg.audio.tokens_per_frame, cfg.audio.dim, generator=g),
                torch.randn(1, 5, cfg.text.dim, generator=g),
                torch.randn(1, cfg.reference.global_tokens + tokens, cfg.dit.dim, generator=g),
            )
            return fam.modules["a2v_dit"].network(*inputs)
        module = fam.modules["dit"]
        dit = module.network_as(InfiniteTalkDiT).config
        frames = 9
        cond = ChunkConditions(
            torch.randn(1, dit.in_dim - dit.out_dim, frames, 6, 8, generator=g),
            torch.randn(1, 257, dit.clip_dim, generator=g),
            torch.randn(1, 7, dit.text_dim, generator=g),
            torch.randn(1, 4, dit.text_dim, generator=g),
            torch.randn(1, 1 + 4 * (frames - 1), 5, 2, 32, generator=g),  # the tiny wav2vec2's 2 hidden layers of 32
        )
        predictor = DiTPredictor(module.network_as(InfiniteTalkDiT), cond)
        latent = torch.randn(1, dit.out_dim, frames, 6, 8, generator=g)
        t = torch.tensor([700.0])
        guided = built.parallel_parts["cfg"][0]  # what the layout's guidance group shares out (all here without one)
        assert isinstance(guided, GuidedPredictions)
        return IT_GUIDANCE.combine(guided(IT_GUIDANCE.predictions, lambda mine: predictor(latent, t, mine)))


def audio() -> list[PcmBlock]:
    samples = speech(SECONDS)
    return [PcmBlock(samples[:, i : i + RATE // 5], RATE) for i in range(0, samples.shape[1], RATE // 5)]  # live-sized blocks


def counting_predictions(counts: dict[str, int]) -> Callable[..., list[torch.Tensor]]:
    """``DiTPredictor._forward`` adding to ``counts["predictions"]`` every prediction this process computes (a batched forward of k counts k)."""
    real = DiTPredictor._forward

    def counted(self: DiTPredictor, latent: torch.Tensor, timestep: torch.Tensor, conditions: tuple[tuple[bool, bool], ...]) -> list[torch.Tensor]:
        counts["predictions"] += len(conditions)
        return real(self, latent, timestep, conditions)

    return counted


def counted_render(name: str, weights: Path) -> tuple[np.ndarray, int]:
    """One process's frames of a LiveAvatar case, and the DiT forwards it made for them (one thread, as in each worker)."""
    torch.set_num_threads(1)
    counts = {"forwards": 0}
    real = S2VDiT.forward

    def counted(self: S2VDiT, *args: object, **kwargs: object) -> torch.Tensor:
        counts["forwards"] += 1
        return real(self, *args, **kwargs)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(S2VDiT, "forward", counted)
        fam = family(name, weights)
        frames = render(fam, pipeline(fam, name))
    return frames, counts["forwards"]


def options_of(fam: Family, name: str = "") -> dict[str, Any]:
    options = {"demo": {"chunk_frames": 6, "interp_frames": 2}, "liveavatar": LA_OPTIONS}.get(fam.name, IT_OPTIONS)
    return {**options, "steps": 2} if name.startswith("liveavatar-2steps") else options


def render(fam: Family, built: Pipeline) -> np.ndarray:
    reference = fam.reference(None, options_of(fam)) if fam.name != "demo" else REFERENCE
    return np.concatenate([c.frames for c in built.stream(audio(), reference, seed=2)])
