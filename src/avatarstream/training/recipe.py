"""The demo family's training recipe: VAE -> encode clips -> decoder, A2V (+ audio/reference encoders), SR.

Seeded end to end. Each stage leaves its weights and a `<stage>.json` record
in a work folder, so a stopped run resumes after the last finished stage and
independent stages can run in separate processes (`--stages decoder` next to
`--stages a2v,sr`: both only need the encoder and the encoded clips). The
result is a weights folder written by `DemoFamily.save` plus `training.json`
(steps, wall times and final losses of every stage), which MODEL.md cites.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from avatarstream.families.demo import DEFAULT_SHIFT, DEFAULT_STEPS, DemoFamily
from avatarstream.models.demo import A2VDiT, AudioEncoder, CausalVAE, DemoConfig, FlowMatchEuler, ReferenceEncoder, SRDiT, TextEncoder
from avatarstream.runtime.devices import resolve_device
from avatarstream.training.a2v import train_a2v
from avatarstream.training.a2v_parts import A2VModels, ChunkGeometry
from avatarstream.training.data import ClipSpec, frame_batches, render_clips
from avatarstream.training.latents import LatentSet, encode_clips
from avatarstream.training.rollout import RolloutSettings
from avatarstream.training.sr import train_sr
from avatarstream.training.vae import train_vae


@dataclass(frozen=True)
class Recipe:
    seed: int = 0
    vae_steps: int = 1200
    vae_batch: int = 2
    vae_sequence: int = 3
    vae_lr: float = 2e-3
    decoder_steps: int = 2000
    decoder_batch: int = 4
    decoder_lr: float = 1e-3
    clips: int = 192
    clip_seconds: float = 5.0
    sr_every: int = 8
    a2v_steps: int = 4000
    a2v_batch: int = 8
    a2v_lr: float = 1e-3
    rollout_every: int = 12
    """A2V steps between two refreshes of the rollout buffer (`training/rollout.py`)."""
    sr_steps: int = 1500
    sr_batch: int = 16
    sr_lr: float = 2e-3
    workers: int = 1
    threads: int = 1
    """Torch threads on CPU while frames are rendered alongside (VAE, decoder, data): one core trains while
    the other renders; with other jobs sharing the cores one thread is also faster (no intra-op barriers)."""
    latent_threads: int = 2
    """Torch threads on CPU for the stages that train on stored latents (A2V, SR): nothing renders then."""

    @classmethod
    def quick(cls) -> Recipe:
        """Minutes, not an hour: for smoke tests of the whole recipe."""
        return cls(vae_steps=20, decoder_steps=10, clips=4, clip_seconds=3.0, a2v_steps=12, rollout_every=4, sr_steps=10, workers=0)


class Progress:
    """Prints a line every `every` steps with the running losses and elapsed time."""

    def __init__(self, stage: str, steps: int, every: int = 50) -> None:
        self.stage, self.steps, self.every = stage, steps, every
        self.start = time.perf_counter()

    def __call__(self, i: int, parts: dict[str, float]) -> None:
        if (i + 1) % self.every == 0 or i + 1 == self.steps:
            text = " ".join(f"{k} {v:.4f}" for k, v in parts.items())
            print(f"[{self.stage}] {i + 1}/{self.steps} {text} ({time.perf_counter() - self.start:.0f} s)", flush=True)


STAGES = ("vae", "data", "decoder", "a2v", "sr")


def run(recipe: Recipe, out: Path, work: Path, config: DemoConfig, device: torch.device, stages: tuple[str, ...] = STAGES) -> dict:
    """Runs the selected stages (missing earlier results are an error) and, when all are done, writes `out`."""
    torch.manual_seed(recipe.seed)

    def use_threads(count: int) -> None:
        if device.type == "cpu":
            torch.set_num_threads(count)

    use_threads(recipe.threads)
    work.mkdir(parents=True, exist_ok=True)
    family = DemoFamily.random(config, seed=recipe.seed)
    modules = family.modules
    for module in modules.values():
        module.network.to(device)
    vae = modules["vae"].network_as(CausalVAE)
    records: dict[str, dict] = {}

    def stage(name: str, files: list[str], body) -> bool:
        """Runs `body` unless its record exists; False when the stage is neither done nor selected."""
        record = work / f"{name}.json"
        if record.exists() and all((work / f).exists() for f in files):
            records[name] = json.loads(record.read_text())
            return True
        if name not in stages:
            return False
        print(f"[{name}] starting", flush=True)
        start = time.perf_counter()
        result = body()
        records[name] = {"seconds": round(time.perf_counter() - start, 1), "device": str(device), **(result or {})}
        record.write_text(json.dumps(records[name], indent=2))
        return True

    def save(names: list[str]):
        for name in names:
            family.modules[name].save_weights(work / f"{name}.safetensors")

    def vae_stage() -> dict:
        batches = frame_batches(recipe.seed, recipe.vae_sequence, recipe.vae_batch, recipe.workers)
        parts = train_vae(vae, batches, recipe.vae_steps, config.base_size, recipe.seed, lr=recipe.vae_lr, log=Progress("vae", recipe.vae_steps, every=25))
        save(["vae"])
        return {"steps": recipe.vae_steps, "final": parts}

    if not stage("vae", ["vae.safetensors"], vae_stage):
        raise SystemExit(f"no trained VAE in {work}: run the vae stage first")
    family.modules["vae"].load_weights(work / "vae.safetensors")

    def decoder_stage() -> dict:
        batches = frame_batches(recipe.seed + 3, recipe.vae_sequence, recipe.decoder_batch, recipe.workers)
        parts = train_vae(
            vae,
            batches,
            recipe.decoder_steps,
            config.base_size,
            recipe.seed + 3,
            lr=recipe.decoder_lr,
            decoder_only=True,
            log=Progress("decoder", recipe.decoder_steps, every=25),
        )
        family.modules["vae"].save_weights(work / "vae_final.safetensors")
        family.modules["vae"].load_weights(work / "vae.safetensors")  # later stages use the first VAE's encoder
        return {"steps": recipe.decoder_steps, "final": parts}

    stage("decoder", ["vae_final.safetensors"], decoder_stage)

    def data_stage() -> dict:
        specs = [ClipSpec.training(recipe.seed, i, recipe.clip_seconds) for i in range(recipe.clips)]
        data = encode_clips(vae, render_clips(specs, recipe.workers), config.base_size, recipe.sr_every)
        data.save(work / "latents.safetensors")
        stacked = torch.cat([b.float().flatten(1) for b in data.base], dim=1)
        return {
            "clips": recipe.clips,
            "frames": sum(b.shape[1] for b in data.base),
            "latent_std": round(stacked.std().item(), 3),
            "latent_mean": round(stacked.mean().item(), 3),
        }

    if not stage("data", ["latents.safetensors"], data_stage):
        return {"stages": records}
    data = LatentSet.load(work / "latents.safetensors")

    def a2v_stage() -> dict:
        use_threads(recipe.latent_threads)
        models = A2VModels(
            modules["a2v_dit"].network_as(A2VDiT), modules["audio_encoder"].network_as(AudioEncoder), modules["reference_encoder"].network_as(ReferenceEncoder)
        )
        text_encoder = modules["text_encoder"].network_as(TextEncoder)
        text = text_encoder(text_encoder.tokenize("").to(device))
        rollout = RolloutSettings(every=recipe.rollout_every)
        final = train_a2v(
            models,
            data,
            text,
            recipe.a2v_steps,
            recipe.seed + 1,
            samples_per_frame=config.samples_per_frame,
            sampler=FlowMatchEuler(DEFAULT_STEPS, DEFAULT_SHIFT),
            geometry=ChunkGeometry(),
            rollout=rollout,
            batch=recipe.a2v_batch,
            lr=recipe.a2v_lr,
            log=Progress("a2v", recipe.a2v_steps, every=25),
        )
        save(["a2v_dit", "audio_encoder", "reference_encoder"])
        return {"steps": recipe.a2v_steps, "rollout": asdict(rollout), "final": final}

    a2v_done = stage("a2v", ["a2v_dit.safetensors", "audio_encoder.safetensors", "reference_encoder.safetensors"], a2v_stage)

    def sr_stage() -> dict:
        use_threads(recipe.latent_threads)
        final = train_sr(
            modules["sr_dit"].network_as(SRDiT),
            data,
            recipe.sr_steps,
            recipe.seed + 2,
            batch=recipe.sr_batch,
            lr=recipe.sr_lr,
            log=Progress("sr", recipe.sr_steps, every=25),
        )
        save(["sr_dit"])
        return {"steps": recipe.sr_steps, "final": final}

    stage("sr", ["sr_dit.safetensors"], sr_stage)
    if not (a2v_done and all(name in records for name in STAGES)):
        return {"stages": records}

    for name in ("a2v_dit", "audio_encoder", "reference_encoder", "sr_dit"):
        family.modules[name].load_weights(work / f"{name}.safetensors")
    family.modules["vae"].load_weights(work / "vae_final.safetensors")
    for module in family.modules.values():
        module.network.cpu()
    family.save(out)
    report = {"recipe": asdict(recipe), "stages": records, "total_seconds": round(sum(r["seconds"] for r in records.values()), 1)}
    (out / "training.json").write_text(json.dumps(report, indent=2))
    return report


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m avatarstream.training", description="Train the demo family on procedural avatars and write a weights folder.")
    p.add_argument("--out", type=Path, default=Path("src/avatarstream/assets/demo"), help="weights folder to write")
    p.add_argument("--work", type=Path, default=Path("out/train-demo"), help="folder for stage results (resumable)")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="a tiny run (minutes) to check the recipe end to end")
    p.add_argument("--stages", default=",".join(STAGES), help="comma-separated stages to run; finished ones are reused, weights are written when all are done")
    args = p.parse_args(argv)
    stages = tuple(s.strip() for s in args.stages.split(",") if s.strip())
    unknown = sorted(set(stages) - set(STAGES))
    if unknown:
        p.error(f"unknown stages {unknown}; choose from {', '.join(STAGES)}")
    recipe = Recipe.quick() if args.quick else Recipe()
    recipe = Recipe(**{**asdict(recipe), "seed": args.seed})
    report = run(recipe, args.out, args.work, DemoConfig(), resolve_device(args.device), stages)
    print(json.dumps({k: v for k, v in report.items() if k != "recipe"}, indent=2))
    return 0
