#!/usr/bin/env python3
"""How far int8 and fp8 renders are from full precision, on every golden set in tests/fixtures and on the demo model.

    python scripts/quantization_quality.py --out quality.json   # the table of docs/quantization.md, section 4

Per golden set and quantization (the CPU; float32 as the sets were made):

- a whole-video set (infinitetalk-video) is rendered through ``avatarstream.render`` as ``avatarstream parity`` does,
  with the DiT and text encoder quantized: PSNR of its frames against the full-precision render and against the
  reference's frames, and how many of the set's own frame checks pass;
- a component set (infinitetalk-tiny, liveavatar-tiny) runs every case of ``avatarstream parity`` with the DiT
  quantized as ``--quantize`` does it (the sets give the text embedding, so no text encoder runs): how many checks
  stay within the set's tolerances (made for float summation order, not for quantization), and the PSNR of the
  sampler case's decoded video (the whole loop, several chunks) against the reference's and against the
  full-precision port's. LiveAvatar's fp8 row stores its KV caches and sink in fp8 too.

The demo model, the one model here with trained weights, is rendered whole (3 s of the bundled speech) at each
quantization, against its full-precision render. The golden sets' weights are random: the figures show what
quantization does to these numbers, not what it does to a trained 14B model's video.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image

import avatarstream
from avatarstream.components import kv_storage
from avatarstream.families.infinitetalk.networks import InfiniteTalkNetworks
from avatarstream.families.infinitetalk.parity import render_arguments
from avatarstream.families.liveavatar.networks import LiveAvatarNetworks
from avatarstream.parity.checks import Check
from avatarstream.parity.fixture import GoldenSet
from avatarstream.parity.video import frame_checks, golden_frames
from avatarstream.publish.frames import frame_paths
from avatarstream.runtime.quantize import is_quantized, quantize_network
from avatarstream.sources.bundled import DEFAULT_SPEECH

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
#: (label, --quantize, fp8 KV caches)
SETTINGS = (("full precision", None, False), ("int8", "int8", False), ("fp8", "fp8", False), ("fp8 + fp8 KV caches", "fp8", True))
#: The decoded video each component set's sampler case compares (case, check name).
VIDEO_CHECKS = {("sampler", "video"), ("sampler", "video frames")}


def psnr(ours: np.ndarray, reference: np.ndarray, peak: float = 255.0) -> float:
    error = float(np.mean((ours.astype(np.float64) - reference.astype(np.float64)) ** 2))
    return math.inf if error == 0 else 10 * math.log10(peak**2 / error)


def read_frames(folder: Path) -> np.ndarray:
    return np.stack([np.asarray(Image.open(path).convert("RGB")) for path in frame_paths(folder)])


@contextlib.contextmanager
def quantized_dits(mode: str | None, fp8_caches: bool) -> Iterator[None]:
    """The families' network loaders quantize their DiT as ``--quantize mode`` does; fp8 caches: every KV cache and
    sink made meanwhile is stored in fp8 (the component sets build their own caches)."""
    loaders = {cls: cls.__dict__["load"] for cls in (InfiniteTalkNetworks, LiveAvatarNetworks)}
    empty = kv_storage.empty

    def quantizing(load: Any) -> Any:
        def wrapped(cls: type, *args: Any, **kwargs: Any) -> Any:
            networks = load.__func__(cls, *args, **kwargs)
            if mode is not None:
                quantize_network(networks.dit, mode, torch.device("cpu"), "dit")
            return networks

        return classmethod(wrapped)

    try:
        for cls, load in loaders.items():
            setattr(cls, "load", quantizing(load))  # noqa: B010 (a classmethod put back as it was)
        if fp8_caches:
            kv_storage.empty = lambda shape, dtype, storage, device: empty(shape, dtype, kv_storage.FP8, device)
        yield
    finally:
        for cls, load in loaders.items():
            setattr(cls, "load", load)  # noqa: B010
        kv_storage.empty = empty


@contextlib.contextmanager
def captured_videos(into: dict[str, torch.Tensor]) -> Iterator[None]:
    """Keep the tensors the sampler case compares as its decoded video (ours and the reference's); a quantized weight a
    case compares is compared dequantized."""
    compare = Check.__dict__["compare"]

    def keeping(cls: type, case: str, name: str, ours: torch.Tensor, reference: torch.Tensor, tolerance: float) -> Check:
        if is_quantized(ours):  # the LoRA case compares a merged weight, held quantized now
            ours = ours.dequantize()
        if (case, name) in VIDEO_CHECKS:
            into["ours"], into["reference"] = ours.detach().clone(), reference.detach().clone()
        return compare.__func__(cls, case, name, ours, reference, tolerance)

    Check.compare = classmethod(keeping)  # type: ignore[assignment]
    try:
        yield
    finally:
        Check.compare = compare


def as_pixels(video: torch.Tensor) -> np.ndarray:
    """A decoded video in [-1, 1] as the 0-255 values a frame would hold (unrounded)."""
    return ((video.double().clamp(-1, 1) + 1) * 127.5).numpy()


def component_set(gs: GoldenSet, cases: Callable[[GoldenSet, Callable[[str], None]], list[Check]]) -> list[dict[str, Any]]:
    rows, full = [], None
    for label, mode, fp8_caches in SETTINGS:
        if fp8_caches and gs.reference_repo != "Alibaba-Quark/LiveAvatar":
            continue
        videos: dict[str, torch.Tensor] = {}
        with quantized_dits(mode, fp8_caches), captured_videos(videos):
            checks = cases(gs, lambda name: None)
        ours, reference = as_pixels(videos["ours"]), as_pixels(videos["reference"])
        full = ours if full is None else full
        rows.append(_row(gs, label, checks, ours, reference, full))
    return rows


def _row(gs: GoldenSet, label: str, checks: list[Any], frames: np.ndarray, reference: np.ndarray, full: np.ndarray) -> dict[str, Any]:
    """One line of the table (printed as it is made): the set's checks within tolerance, PSNR to the reference and to full precision."""
    row = {
        "set": gs.root.name, "quantization": label, "checks_within_tolerance": f"{sum(c.passed for c in checks)} of {len(checks)}",
        "psnr_vs_reference_db": psnr(frames, reference), "psnr_vs_full_precision_db": psnr(frames, full),
    }  # fmt: skip
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
    args = parser.parse_args()
    torch.set_num_threads(1)
    from avatarstream.families.infinitetalk.parity import run_cases as infinitetalk_cases
    from avatarstream.families.liveavatar.parity import run_cases as liveavatar_cases

    cases = {"MeiGen-AI/InfiniteTalk": infinitetalk_cases, "Alibaba-Quark/LiveAvatar": liveavatar_cases}
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for root in sorted(p.parent for p in FIXTURES.glob("*/golden.json")):
            gs = GoldenSet.open(root)
            rows += whole_video_set(gs, Path(tmp)) if gs.whole_video else component_set(gs, cases[gs.reference_repo])
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
