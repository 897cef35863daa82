#!/usr/bin/env python3
"""Write a random tiny checkpoint of a family laid out exactly as the real downloads are.

    python scripts/make_tiny_checkpoint.py --layout original OUT
    python scripts/make_tiny_checkpoint.py --layout diffusers OUT
    python scripts/make_tiny_checkpoint.py --family liveavatar OUT
    python scripts/make_tiny_checkpoint.py --family flashhead [--variant pro|lite] OUT
    python scripts/make_tiny_checkpoint.py --family flashvsr OUT

For infinitetalk (the default), OUT then holds Wan2.1-I2V-14B-480P/ (or Wan2.1-I2V-14B-480P-Diffusers/) with the DiT,
VAE, UMT5 and CLIP files and tokenizers, InfiniteTalk/single/infinitetalk.safetensors
and chinese-wav2vec2-base/: `avatarstream ... --model infinitetalk --weights OUT` runs
the whole family on a CPU in seconds (random weights: the video is noise).
For liveavatar, OUT holds Wan2.2-S2V-14B/ (DiT shards, config.json, Wan2.1_VAE.pth,
umT5 and its tokenizer, wav2vec2-large-xlsr-53-english/) and LiveAvatar/liveavatar.safetensors.
For flashhead, OUT holds SoulX-FlashHead-1_3B/ (Model_Pro/ and VAE_Wan/, or Model_Lite/ and VAE_LTX/) and
wav2vec2-base-960h/. For flashvsr, OUT holds the files of the FlashVSR download and posi_prompt.pth:
`--upscale flashvsr --upscale-weights OUT` upscales any model's frames 4x.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from avatarstream.families.flashhead.tiny import write_tiny_checkpoint as write_tiny_flashhead
from avatarstream.families.flashvsr.tiny import write_tiny_checkpoint as write_tiny_flashvsr
from avatarstream.families.infinitetalk.tiny import write_tiny_checkpoint
from avatarstream.families.liveavatar.tiny import write_tiny_checkpoint as write_tiny_liveavatar


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, metavar="OUT", help="folder to write the download folders into")
    parser.add_argument(
        "--family",
        choices=("infinitetalk", "liveavatar", "flashhead", "flashvsr"),
        default="infinitetalk",
        help="which model family's (or upscaler's) checkpoint",
    )
    parser.add_argument("--variant", choices=("pro", "lite"), default="pro", help="flashhead: which variant's folders")
    parser.add_argument("--layout", choices=("original", "diffusers"), default="original", help="infinitetalk: which download layout of the Wan base model")
    parser.add_argument("--seed", type=int, default=0, help="random seed; the same seed gives the same networks in both layouts")
    parser.add_argument("--shards", type=int, default=2, help="number of DiT weight shards (the real model has 7)")
    args = parser.parse_args()
    if args.shards < 1:
        parser.error("--shards must be at least 1")
    if args.family == "flashhead":
        print(f"wrote a tiny flashhead {args.variant} checkpoint: {write_tiny_flashhead(args.out, seed=args.seed, variant=args.variant)}")
        return
    if args.family == "flashvsr":
        print(f"wrote a tiny flashvsr checkpoint: {write_tiny_flashvsr(args.out, seed=args.seed)}")
        return
    if args.family == "liveavatar":
        live = write_tiny_liveavatar(args.out, seed=args.seed, shards=args.shards)
        print(f"wrote a tiny liveavatar checkpoint: {live.base}, {live.lora}")
        return
    written = write_tiny_checkpoint(args.out, args.layout, seed=args.seed, shards=args.shards)
    print(f"wrote a tiny {args.layout}-layout checkpoint: {written.base}, {written.adapter}, {written.audio_encoder}")


if __name__ == "__main__":
    main()
