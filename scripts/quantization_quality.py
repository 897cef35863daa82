#!/usr/bin/env python3
"""How far int8 and fp8 renders are from full precision, on every golden set in tests/fixtures and on the demo model.

    python scripts/quantization_quality.py --out quality.json   # the table of docs/quantization.md, section 4
    python scripts/quantization_quality.py --sets flashhead-tiny flashvsr-tiny   # some sets only (no demo)

Per golden set and quantization (the CPU; float32 as the sets were made):

- a whole-video set (infinitetalk-video) is rendered through ``avatarstream.render`` as ``avatarstream parity`` does,
  with the DiT and text encoder quantized: PSNR of its frames against the full-precision render and against the
  reference's frames, and how many of the set's own frame checks pass;
- a component set (infinitetalk-tiny, liveavatar-tiny, flashhead-tiny, flashvsr-tiny) runs every case of
  ``avatarstream parity`` with the modules ``--quantize`` quantizes by default (the DiT; FlashVSR's DiT and LQ
  projection; the sets give the text embedding, so no text encoder runs): how many checks stay within the set's
  tolerances (made for float summation order, not for quantization), and the PSNR of the video its stream case
  makes (the whole loop, several chunks: the decoded video of infinitetalk and liveavatar, the uint8 frames of
  flashvsr) against the reference's and against the full-precision port's. flashhead's stream case decodes the
  reference's latents, so its video is rendered through ``avatarstream.render`` from the reference's seed instead,
  one row per variant (Pro's frames are the reference's; Lite's reference drew its encodes' noise elsewhere, so
  Lite is measured against full precision only). The fp8 rows of the models that keep KV caches (liveavatar,
  flashvsr) store them in fp8 too.

The demo model, the one model here with trained weights, is rendered whole (3 s of the bundled speech) at each
quantization, against its full-precision render. The golden sets' weights are random: the figures show what
quantization does to these numbers, not what it does to a trained 14B model's video.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image

import avatarstream
from avatarstream.components import kv_storage
from avatarstream.families.flashhead.networks import FlashHeadNetworks
from avatarstream.families.flashvsr import parity as flashvsr_parity
from avatarstream.families.flashvsr.networks import FlashVSRNetworks
from avatarstream.families.infinitetalk.networks import InfiniteTalkNetworks
from avatarstream.families.infinitetalk.parity import render_arguments
from avatarstream.families.liveavatar.networks import LiveAvatarNetworks
from avatarstream.golden_sets import run_golden_set
from avatarstream.models.flashvsr.dit import KVCache
from avatarstream.parity.checks import Check
from avatarstream.parity.fixture import GoldenSet
from avatarstream.parity.video import frame_checks, golden_frames
from avatarstream.publish.frames import frame_paths
from avatarstream.runtime.quantize import is_quantized, quantize_network
from avatarstream.sources.bundled import DEFAULT_SPEECH
from avatarstream.weights.files import read_safetensors

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
#: (label, --quantize, fp8 KV caches)
SETTINGS = (("full precision", None, False), ("int8", "int8", False), ("fp8", "fp8", False), ("fp8 + fp8 KV caches", "fp8", True))
#: Each family's networks and the ones among them --quantize quantizes by default (the sets give the text embedding).
QUANTIZED = {InfiniteTalkNetworks: ("dit",), LiveAvatarNetworks: ("dit",), FlashHeadNetworks: ("dit",), FlashVSRNetworks: ("dit", "lq_proj")}
#: The sets of models that keep KV caches (their fp8 row stores them in fp8 too).
KV_CACHE_SETS = ("liveavatar-tiny", "flashvsr-tiny")
#: The decoded video a set's sampler case compares through ``Check.compare`` (case, check name).
VIDEO_CHECKS = {("sampler", "video"), ("sampler", "video frames")}
#: Where a set compares its stream's uint8 frames: (parity module, function(case, ours, reference, ...)).
FRAME_CHECKS = {"flashvsr-tiny": (flashvsr_parity, "_uint8_checks")}
#: FlashHead's variants, and the seed of its golden streams (Pro's draws are the reference's from it).
FLASHHEAD_VARIANTS = ("pro", "lite")
FLASHHEAD_SEED = 42
#: A video's pixels (0-255, unrounded where the set compares floats), ours and the reference's (None: not comparable), by
#: variant ("" for a set of one model).
Videos = dict[str, tuple[np.ndarray, np.ndarray | None]]


def psnr(ours: np.ndarray, reference: np.ndarray, peak: float = 255.0) -> float:
    error = float(np.mean((ours.astype(np.float64) - reference.astype(np.float64)) ** 2))
    return math.inf if error == 0 else 10 * math.log10(peak**2 / error)


def read_frames(folder: Path) -> np.ndarray:
    return np.stack([np.asarray(Image.open(path).convert("RGB")) for path in frame_paths(folder)])


@contextlib.contextmanager
def quantized_networks(mode: str | None, fp8_caches: bool) -> Iterator[None]:
    """The families' network loaders quantize their modules as ``--quantize mode`` does; fp8 caches: every KV cache and
    sink made meanwhile is stored in fp8 (the component sets build their own caches)."""
    loaders = {cls: cls.__dict__["load"] for cls in QUANTIZED}
    empty, flashvsr_empty = kv_storage.empty, KVCache.__dict__["empty"]

    def quantizing(load: Any) -> Any:
        def wrapped(cls: type, *args: Any, **kwargs: Any) -> Any:
            networks = load.__func__(cls, *args, **kwargs)
            for name in QUANTIZED[cls]:
                if mode is not None:
                    quantize_network(getattr(networks, name), mode, torch.device("cpu"), name)
            return networks

        return classmethod(wrapped)

    try:
        for cls, load in loaders.items():
            setattr(cls, "load", quantizing(load))  # noqa: B010 (a classmethod put back as it was)
        if fp8_caches:
            kv_storage.empty = lambda shape, dtype, storage, device: empty(shape, dtype, kv_storage.FP8, device)
            setattr(KVCache, "empty", classmethod(lambda cls, layers, storage=None: flashvsr_empty.__func__(cls, layers, kv_storage.FP8)))  # noqa: B010
        yield
    finally:
        for cls, load in loaders.items():
            setattr(cls, "load", load)  # noqa: B010
        kv_storage.empty = empty
        setattr(KVCache, "empty", flashvsr_empty)  # noqa: B010


@contextlib.contextmanager
def captured_videos(into: Videos) -> Iterator[None]:
    """Keep the tensors the sampler case compares as its decoded video (ours and the reference's); a quantized weight a
    case compares is compared dequantized."""
    compare = Check.__dict__["compare"]

    def keeping(cls: type, case: str, name: str, ours: torch.Tensor, reference: torch.Tensor, tolerance: float) -> Check:
        if is_quantized(ours):  # the LoRA case compares a merged weight, held quantized now
            ours = ours.dequantize()
        if (case, name) in VIDEO_CHECKS:
            into[""] = as_pixels(ours), as_pixels(reference)
        return compare.__func__(cls, case, name, ours, reference, tolerance)

    Check.compare = classmethod(keeping)  # type: ignore[assignment]
    try:
        yield
    finally:
        Check.compare = compare


@contextlib.contextmanager
def captured_frames(set_name: str, into: Videos) -> Iterator[None]:
    """Keep the uint8 frames a set's stream case compares (FRAME_CHECKS), the first time."""
    if set_name not in FRAME_CHECKS:
        yield
        return
    module, name = FRAME_CHECKS[set_name]
    function = getattr(module, name)

    def keeping(case: str, ours: torch.Tensor, reference: torch.Tensor, *rest: Any) -> Any:
        into.setdefault("", (ours.numpy().astype(np.float64), reference.numpy().astype(np.float64)))
        return function(case, ours, reference, *rest)

    setattr(module, name, keeping)
    try:
        yield
    finally:
        setattr(module, name, function)


def flashhead_renders(gs: GoldenSet, work: Path) -> Videos:
    """Each FlashHead variant's golden stream rendered through ``avatarstream.render`` with the set's sizes, speech, image
    and seed; Pro's against the set's frames (its draws are the reference's), Lite's against nothing."""
    videos: Videos = {}
    for name in FLASHHEAD_VARIANTS:
        infer = gs.spec["config"][name]["infer_params"]
        options = {"preset": name, "size": [infer["width"], infer["height"]], "chunk_frames": infer["frame_num"], "motion_latents": infer["motion_frames_latent_num"],
                   "steps": infer["sample_steps"], "shift": infer["sample_shift"], "audio_buffer_s": infer["cached_audio_duration"]}  # fmt: skip
        out = work / f"{gs.root.name}-{name}"
        cases = gs.root / "cases"
        avatarstream.render(cases / "speech.wav", cases / "ref_image.png", model="flashhead", weights=gs.weights, model_options=options, out=None,
                            frames=out, seed=FLASHHEAD_SEED, threads=1)  # fmt: skip
        golden = read_safetensors(cases / f"stream_{name}.safetensors")["frames_u8"].numpy().astype(np.float64)
        videos[name] = read_frames(out)[: len(golden)].astype(np.float64), golden if name == "pro" else None
        shutil.rmtree(out)
    return videos


def variant(case: str) -> str:
    """The FlashHead variant a case is of (``stream_pro``: pro), "" for any other case."""
    return case.rpartition("_")[2] if case.endswith(tuple(f"_{name}" for name in FLASHHEAD_VARIANTS)) else ""


def as_pixels(video: torch.Tensor) -> np.ndarray:
    """A decoded video in [-1, 1] as the 0-255 values a frame would hold (unrounded)."""
    return ((video.double().clamp(-1, 1) + 1) * 127.5).numpy()


def component_set(gs: GoldenSet, work: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    full: dict[str, np.ndarray] = {}
    for label, mode, fp8_caches in SETTINGS:
        if fp8_caches and gs.root.name not in KV_CACHE_SETS:
            continue
        videos: Videos = {}
        with quantized_networks(mode, fp8_caches), captured_videos(videos), captured_frames(gs.root.name, videos):
            checks = run_golden_set(gs.root)
            if gs.root.name == "flashhead-tiny":
                videos |= flashhead_renders(gs, work)
        for part, (ours, reference) in videos.items():
            full.setdefault(part, ours)
            mine = [c for c in checks if variant(c.case) == part] if part else checks  # a variant's row: its cases
            rows.append(_row(gs, label, mine, ours, reference, full[part], part))
    return sorted(rows, key=lambda row: list(full).index(row["set"].partition(", ")[2]))  # a variant's rows together


def _row(gs: GoldenSet, label: str, checks: list[Any], frames: np.ndarray, reference: np.ndarray | None, full: np.ndarray, part: str = "") -> dict[str, Any]:
    """One line of the table (printed as it is made): the set's checks within tolerance, PSNR to the reference and to full precision."""
    row: dict[str, Any] = {"set": f"{gs.root.name}, {part}" if part else gs.root.name, "quantization": label,
                           "checks_within_tolerance": f"{sum(c.passed for c in checks)} of {len(checks)}"}  # fmt: skip
    row |= {"psnr_vs_reference_db": psnr(frames, reference)} if reference is not None else {}
    row["psnr_vs_full_precision_db"] = psnr(frames, full)
    print(row, flush=True)
    return row


def whole_video_set(gs: GoldenSet, work: Path) -> list[dict[str, Any]]:
    rows, full = [], None
    golden = golden_frames(gs)
    assert golden is not None, f"{gs.root} has no reference frames"
    for label, mode, fp8_caches in SETTINGS:
        if fp8_caches:
            continue  # InfiniteTalk keeps no KV cache
        out = work / f"{gs.root.name}-{label.replace(' ', '-')}"
        arguments = render_arguments(gs)
        arguments["model_options"] = {**arguments["model_options"], **({"quantize": mode} if mode else {})}
        avatarstream.render(out=None, frames=out, threads=1, **arguments)
        frames = read_frames(out)
        full = frames if full is None else full
        checks = frame_checks(gs, out, golden)
        rows.append(_row(gs, label, checks, frames, golden, full))
    return rows


def demo(work: Path) -> list[dict[str, Any]]:
    rows, full = [], None
    for label, mode, fp8_caches in SETTINGS:
        if fp8_caches:
            continue
        out = work / f"demo-{label.replace(' ', '-')}"
        options = {"quantize": mode} if mode else {}
        avatarstream.render(DEFAULT_SPEECH, model="demo", model_options=options, out=None, frames=out, threads=1, device="cpu")
        frames = read_frames(out)[:75]  # the first 3 s
        full = frames if full is None else full
        rows.append({"set": "demo (trained weights, 3 s)", "quantization": label, "psnr_vs_full_precision_db": psnr(frames, full)})
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="write the rows as JSON")
    parser.add_argument(
        "--sets", nargs="+", metavar="NAME", help="only these golden sets of tests/fixtures, and not the demo model (default: all, and the demo)"
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    roots = sorted(p.parent for p in FIXTURES.glob("*/golden.json"))
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for root in roots if args.sets is None else [FIXTURES / name for name in args.sets]:
            gs = GoldenSet.open(root)
            rows += whole_video_set(gs, Path(tmp)) if gs.whole_video else component_set(gs, Path(tmp))
        if args.sets is None:
            rows += demo(Path(tmp))
    if args.out:
        args.out.write_text(json.dumps(rows, indent=2))
    print("| set | quantization | checks within the set's tolerances | PSNR vs reference, dB | PSNR vs full precision, dB |")
    print("|---|---|---|---:|---:|")
    for row in rows:
        cells = [row["set"], row["quantization"], row.get("checks_within_tolerance", "—")]
        cells += [
            f"{row[k]:.1f}" if k in row and math.isfinite(row[k]) else ("—" if k not in row else "identical")
            for k in ("psnr_vs_reference_db", "psnr_vs_full_precision_db")
        ]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
