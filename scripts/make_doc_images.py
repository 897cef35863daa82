"""Regenerate docs/images/demo-frames.png: held-out avatars animated by the shipped demo weights.

One row per held-out identity: the reference, then frames at fixed times of a
clip driven by held-out speech. Run by a maintainer after retraining; the
image is committed. Needs espeak-ng (scripts/system-deps.sh).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from avatarstream.avatars import Identity, reference_image
from avatarstream.avatars.identity import HELD_OUT_IDENTITIES
from avatarstream.avatars.speech import speech_track
from avatarstream.evaluation.run import blocks
from avatarstream.families.assemble import build_pipeline
from avatarstream.families.demo import DemoFamily

OUT = Path(__file__).resolve().parents[1] / "docs" / "images" / "demo-frames.png"


def frames_at(family: DemoFamily, identity_seed: int, seconds: list[float]) -> list[np.ndarray]:
    """The frames at `seconds` of a held-out clip; only those frames are kept while the clip streams."""
    fps = family.config.fps
    wanted = {round(s * fps) for s in seconds}
    audio = speech_track(max(seconds) + 1.0, 30_000 + identity_seed % 1000, "heldout")
    reference = reference_image(Identity.from_seed(identity_seed))
    kept, index = {}, 0
    for media in build_pipeline(family, torch.device("cpu")).stream(blocks(audio), reference, seed=0):
        for frame in media.frames:
            if index in wanted:
                kept[index] = frame.copy()
            index += 1
    return [reference] + [kept[i] for i in sorted(kept)]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--weights", default=None, help="weights folder (default: the shipped weights)")
    p.add_argument("--identities", type=int, default=3)
    p.add_argument("--seconds", type=float, nargs="+", default=[1.0, 4.6, 9.2])
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args()
    family = DemoFamily.load(args.weights)
    rows = [np.concatenate(frames_at(family, HELD_OUT_IDENTITIES + k, args.seconds), axis=1) for k in range(args.identities)]
    Image.fromarray(np.concatenate(rows, axis=0)).save(args.out, optimize=True)
    print("wrote", args.out)


if __name__ == "__main__":
    main()
