"""Latent-level diagnostics of the A2V DiT on training clips: seam jumps and long-chain drift.

Both sample chunks exactly as the pipeline does (`sample_window`, the demo
sampler, 12 generated frames after 2 motion frames) but stay in latent
space, so they take a minute or two where a pixel eval takes ten.

  seams  6 chunks on 16 clips, conditioned on the clips' own frames ("gt")
         and on the chain's own frames ("self"): the change from the last
         motion frame to the first generated one against the change between
         generated frames, next to the clips' own frame-to-frame change.
  drift  a long self-conditioned chain from the reference (looped audio):
         mean |latent - reference| per 10 chunks, next to the clips' value.

Needs the latents a training run cached: python scripts/a2v_chains.py seams WEIGHTS --latents WORK/latents.safetensors
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import torch

from avatarstream.families.demo import DEFAULT_SHIFT, DEFAULT_STEPS, MOTION_FRAMES, DemoFamily
from avatarstream.models.demo import FlowMatchEuler
from avatarstream.stages.demo.audio_to_video import sample_window
from avatarstream.training.a2v import WindowAudio
from avatarstream.training.latents import LatentSet

GENERATED = 12
WINDOW = MOTION_FRAMES + GENERATED


@dataclass
class Chains:
    """The networks, the clips and the sampler, set up once for either diagnostic."""

    family: DemoFamily
    data: LatentSet
    clips: list[int]

    def __post_init__(self) -> None:
        nets = {name: module.network.eval() for name, module in self.family.modules.items()}
        self.dit, self.audio_encoder = nets["a2v_dit"], nets["audio_encoder"]
        self.text = nets["text_encoder"](nets["text_encoder"].tokenize("")).expand(len(self.clips), -1, -1)
        self.reference_base = self.data.reference_base[self.clips].float()
        self.reference = nets["reference_encoder"](self.reference_base)
        self.sampler = FlowMatchEuler(DEFAULT_STEPS, DEFAULT_SHIFT)
        context = (self.audio_encoder.frames_before, self.audio_encoder.frames_after)
        self.window_audio = WindowAudio(self.data, context, self.family.config.samples_per_frame)

    def chunk(self, motion: torch.Tensor, audio: torch.Tensor) -> torch.Tensor:
        """One N-chunk window [B, C, WINDOW, h, w] after `motion` [B, C, 2, h, w]."""
        b, c, _, h, w = motion.shape
        noise = torch.randn(b, c, WINDOW, h, w)
        return sample_window(self.dit, self.sampler, noise, motion, list(range(MOTION_FRAMES)), self.audio_encoder(audio), self.text, self.reference)

    def truth(self, start: int) -> torch.Tensor:
        return torch.stack([self.data.base[c][:, start : start + WINDOW].float() for c in self.clips])


def change(a: torch.Tensor, b: torch.Tensor) -> float:
    return (a - b).abs().mean().item()


def seams(chains: Chains, chunks: int = 6, first: int = 20) -> None:
    for mode in ("gt", "self"):
        start, motion = first, chains.truth(first)[:, :, :MOTION_FRAMES]
        jumps, within, truth_within, error = [], [], [], []
        for k in range(chunks):
            audio = torch.stack([chains.window_audio(c, start, WINDOW) for c in chains.clips])
            latents, truth = chains.chunk(motion, audio), chains.truth(start)
            if k == 0 and mode == "gt":
                again = chains.chunk(motion, audio)
                print(f"two samples of one chunk differ by {change(latents[:, :, MOTION_FRAMES:], again[:, :, MOTION_FRAMES:]):.3f}")
            jumps.append(change(latents[:, :, MOTION_FRAMES], latents[:, :, MOTION_FRAMES - 1]))
            within.append(change(latents[:, :, MOTION_FRAMES + 1 :], latents[:, :, MOTION_FRAMES:-1]))
            truth_within.append(change(truth[:, :, 1:], truth[:, :, :-1]))
            error.append(change(latents[:, :, MOTION_FRAMES:], truth[:, :, MOTION_FRAMES:]))
            start += GENERATED
            motion = chains.truth(start)[:, :, :MOTION_FRAMES] if mode == "gt" else latents[:, :, -MOTION_FRAMES:]
        mean = lambda values: sum(values) / len(values)
        print(
            f"{mode:4s} seam jump {mean(jumps):.3f}, within chunk {mean(within):.3f}, clips {mean(truth_within):.3f};"
            f" error against the clip per chunk: {' '.join(f'{e:.3f}' for e in error)}"
        )


def drift(chains: Chains, chunks: int) -> None:
    reference = chains.reference_base[:, :, None]
    truth_distance = sum(change(chains.data.base[c].float(), chains.data.reference_base[c].float()[:, None]) for c in chains.clips) / len(chains.clips)
    distances, start = [], -MOTION_FRAMES
    motion = reference.expand(-1, -1, MOTION_FRAMES, -1, -1)
    spf = chains.family.config.samples_per_frame
    before, after = chains.audio_encoder.frames_before, chains.audio_encoder.frames_after
    for _ in range(chunks):
        span = torch.arange((start - before) * spf, (start + WINDOW + after) * spf)
        audio = torch.stack([chains.data.audio[c][span % len(chains.data.audio[c])] for c in chains.clips])
        latents = chains.chunk(motion, audio)
        distances.append(change(latents[:, :, MOTION_FRAMES:], reference))
        motion, start = latents[:, :, -MOTION_FRAMES:], start + GENERATED
    per_ten = [sum(distances[i : i + 10]) / len(distances[i : i + 10]) for i in range(0, chunks, 10)]
    print(f"|latent - reference|: clips {truth_distance:.3f}; chain per 10 chunks: {' '.join(f'{d:.3f}' for d in per_ten)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("diagnostic", choices=("seams", "drift"))
    parser.add_argument("weights", type=Path, help="a weights folder written by the training recipe")
    parser.add_argument(
        "--latents", type=Path, default=Path("out/train-demo/latents.safetensors"), help="the latents cached by the training recipe (WORK/latents.safetensors)"
    )
    parser.add_argument("--chunks", type=int, default=120, help="chunks of the drift chain (120 = about a minute)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    data = LatentSet.load(args.latents)
    chains = Chains(DemoFamily.load(str(args.weights)), data, list(range(0, len(data.base), 12)))
    with torch.no_grad():
        if args.diagnostic == "seams":
            seams(chains)
        else:
            drift(chains, args.chunks)


if __name__ == "__main__":
    main()
