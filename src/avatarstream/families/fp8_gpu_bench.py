"""bf16 against fp8 at real size on one GPU: the same render twice, before and after ``--quantize fp8`` (and LiveAvatar's
``--kv-cache-dtype fp8``), with fps, time to first frame, peak device memory, the weights' bytes and the PSNR between
the two videos.

The networks are the family GPU benchmarks' random bf16 weights built on the device (``gpu_bench.build_networks``);
after the bf16 render the DiT and the text encoder are quantized in place, on the device, as the load option does it
(fp8 matmuls where the GPU has fp8 tensor cores). Random weights make the PSNR a figure of how far fp8 arithmetic moves
a 14B model's output through a whole render, not of what it does to a trained model's video; the quality of trained
weights is in docs/quantization.md. Each render is preceded by a one-chunk warm-up; no render starts after the budget.

    python -m avatarstream.families.fp8_gpu_bench --family liveavatar --out DIR              # a CUDA GPU
    python -m avatarstream.families.fp8_gpu_bench --family infinitetalk --out DIR --tiny --device cpu   # seconds, a dry run
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from avatarstream.benchtools import gpu_run
from avatarstream.benchtools.audio import bundled_speech, looped
from avatarstream.benchtools.measure import measure
from avatarstream.families.assemble import build_pipeline
from avatarstream.families.base import Family
from avatarstream.families.quantization import quantize_loaded
from avatarstream.parity.video import psnr
from avatarstream.runtime.devices import synchronize
from avatarstream.runtime.quantize import parameter_bytes

RESULT_FILE = "fp8-gpu.json"
#: GPU memory (GiB, torch's total) from which LiveAvatar keeps its 4 cache blocks in bf16; below, 2 (an 80 GB card holds
#: 73.9 GiB of bf16 weights and caches at 704x384 with umT5 offloaded, too close to its total for the activations).
FULL_CACHE_GIB = 100


@dataclass(frozen=True)
class Case:
    """One family's comparison: both renders' options, what the fp8 one adds, where the weights live, the speech."""

    family: Callable[[bool, torch.device], Family]
    options: Mapping[str, Any]
    fp8_options: Mapping[str, Any]
    defaults: tuple[str, ...]  # the modules --quantize takes by default
    seconds: float
    warm_up_s: float
    sample_rate: int
    residency: Mapping[str, str] = field(default_factory=dict)


def infinitetalk(tiny: bool, device: torch.device) -> Case:
    from avatarstream.families.infinitetalk import gpu_bench
    from avatarstream.families.infinitetalk.family import InfiniteTalkFamily
    from avatarstream.families.infinitetalk.options import QUANTIZED_BY_DEFAULT
    from avatarstream.models.infinitetalk.audio_features import SAMPLE_RATE

    def make(tiny: bool, device: torch.device) -> Family:
        networks = gpu_bench.build_networks(gpu_bench.tiny_sizes() if tiny else gpu_bench.real_sizes(), device, gpu_bench.DTYPE)
        return InfiniteTalkFamily.from_networks(networks, "random weights")

    chunk = gpu_bench.one_chunk_s("flashtalk")
    size = (64, 48) if tiny else (832, 480)
    return Case(make, {"preset": "flashtalk", "size": size}, {}, QUANTIZED_BY_DEFAULT, 2 * chunk, chunk, SAMPLE_RATE)


def liveavatar(tiny: bool, device: torch.device) -> Case:
    from avatarstream.families.liveavatar import gpu_bench
    from avatarstream.families.liveavatar.family import LiveAvatarFamily
    from avatarstream.families.liveavatar.options import QUANTIZED_BY_DEFAULT
    from avatarstream.models.liveavatar.audio_features import SAMPLE_RATE

    def make(tiny: bool, device: torch.device) -> Family:
        dtype = gpu_bench.DTYPE if device.type == "cuda" else torch.float32  # as its own benchmark: bf16 convolutions crawl on a CPU
        return LiveAvatarFamily.from_networks(gpu_bench.build_networks(tiny, device, dtype), "random weights")

    big = device.type == "cuda" and torch.cuda.get_device_properties(device).total_memory >= FULL_CACHE_GIB * gpu_run.GIB
    options = {"size": (64, 64) if tiny else (704, 384), "cache_blocks": 4 if big else 2}
    return Case(make, options, {"kv_cache_dtype": "fp8"}, QUANTIZED_BY_DEFAULT, 2.0, 0.5, SAMPLE_RATE, {"text_encoder": "offloaded"})


CASES = {"infinitetalk": infinitetalk, "liveavatar": liveavatar}


def render(family: Family, case: Case, options: Mapping[str, Any], seconds: float, device: torch.device) -> dict[str, Any]:
    """One render's figures and frames (``frames_array``)."""
    pipeline = build_pipeline(family, device, options, residency=case.residency, overlap=True, read_ahead=True)
    try:
        pipeline.prepare()
        synchronize(device)
        gpu_run.reset_device_peak(device)
        return measure(pipeline, family.reference(None, options), looped(bundled_speech(case.sample_rate), case.sample_rate, seconds), keep_frames=True)
    finally:
        pipeline.runtime.close()
        gpu_run.back_on_device((m.network for m in family.modules.values()), device)


def figures(report: dict[str, Any], family: Family) -> dict[str, Any]:
    peak = report["peak_device_bytes"]
    return {
        **{k: report[k] for k in ("ttff_s", "fps_out", "realtime_factor", "wall_s", "frames")},
        "peak_device_gib": round(peak / gpu_run.GIB, 2) if peak is not None else None,
        "weight_bytes": {name: parameter_bytes(m.network) for name, m in family.modules.items()},
    }


def compare(name: str, tiny: bool, device: torch.device, budget_s: float, progress: gpu_run.Progress) -> dict[str, Any]:
    case = CASES[name](tiny, device)
    progress(f"building {name}'s {'tiny' if tiny else 'real-size'} networks on {device}")
    family = case.family(tiny, device)
    synchronize(device)
    dtype = str(next(family.modules[case.defaults[0]].network.parameters()).dtype).removeprefix("torch.")  # "bf16" is float32 on a CPU dry run
    result: dict[str, Any] = {"family": name, "dtype": dtype, "options": dict(case.options), "residency": dict(case.residency), "audio_s": case.seconds}
    frames: dict[str, np.ndarray] = {}
    for label in ("bf16", "fp8"):
        if label == "fp8":
            result["quantized"] = quantize_loaded(family.modules, "fp8", None, case.defaults, device)
            progress(f"quantized: {result['quantized']}")
        if progress.elapsed > budget_s:
            result[label] = {"status": "skipped", "reason": f"time budget of {budget_s:g} s spent"}
            continue
        options = {**case.options, **(case.fp8_options if label == "fp8" else {})}
        progress(f"{label}: warm-up, then {case.seconds:g} s of speech")
        render(family, case, options, case.warm_up_s, device)
        report = render(family, case, options, case.seconds, device)
        frames[label] = report["frames_array"]
        result[label] = {"status": "ok", "options": options, **figures(report, family)}
        progress(f"  -> ttff {report['ttff_s']:.2f} s, {report['fps_out']:.2f} fps, peak {result[label]['peak_device_gib']} GiB")
    if len(frames) == 2:
        bf16, fp8 = (frames[k].astype(np.int64) for k in ("bf16", "fp8"))
        result["psnr_db"] = psnr(float(np.square(fp8 - bf16).sum()), bf16.size) if bf16.shape == fp8.shape else None
        progress(f"PSNR of fp8 against bf16: {result['psnr_db']}")
    return result


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = gpu_run.run_parser(__doc__.split("\n\n")[0], RESULT_FILE, 120.0, "start no render after this many seconds")
    parser.add_argument("--family", choices=sorted(CASES), required=True)
    args = parser.parse_args(argv)
    progress, device = gpu_run.start_run(parser, args)
    args.out.mkdir(parents=True, exist_ok=True)
    result = {"benchmark": "fp8-gpu", "environment": gpu_run.environment(device), "tiny": args.tiny}
    result |= compare(args.family, args.tiny, device, args.budget_s, progress)
    result["total_s"] = round(progress.elapsed, 1)
    gpu_run.write_json(args.out / RESULT_FILE, result)
    progress(f"wrote {args.out / RESULT_FILE}")
    return result


if __name__ == "__main__":
    main()
