"""The cascade at real size with random weights: LiveAvatar (Wan2.2-S2V-14B + LoRA) at 320x192, then FlashVSR 4x -> 1280x768.

Random bf16 weights are built straight on the device (speed does not depend on
their values). Scenarios on one GPU, each a render of looped bundled speech:
every module resident, then both DiTs offloaded (``dit`` and ``flashvsr_dit``:
the GPU holds one large model at a time and the runtime hands it over per
chunk). Under torchrun with ``--parallel decode`` (two GPUs) rank 1 runs the
decode and FlashVSR while rank 0 generates. Reported per scenario: time to
first frame, fps, real-time factor, per-stage time, every stage switch's count
and cost (``stage_switches``), peak device memory and FlashVSR's session bytes.

    python -m avatarstream.families.flashvsr.gpu_bench --out bench/results/DIR            # one CUDA GPU, ~2 min
    torchrun --standalone --nproc-per-node 2 -m avatarstream.families.flashvsr.gpu_bench --out DIR --parallel decode
    python -m avatarstream.families.flashvsr.gpu_bench --out /tmp/x --tiny --device cpu   # tiny networks, seconds
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from typing import Any

import torch

from avatarstream.benchtools import gpu_run
from avatarstream.benchtools.audio import bundled_speech, looped
from avatarstream.benchtools.measure import measure
from avatarstream.families.assemble import build_pipeline
from avatarstream.families.flashvsr.memory import session_bytes
from avatarstream.families.flashvsr.networks import FlashVSRNetworks
from avatarstream.families.flashvsr.options import FlashVSROptions
from avatarstream.families.flashvsr.tiny import TINY_DIT, TINY_LQ_PROJ, TINY_TCDECODER, TINY_TEXT_LEN
from avatarstream.families.flashvsr.upscaler import FlashVSRUpscaler, modules_of
from avatarstream.families.liveavatar.family import LiveAvatarFamily
from avatarstream.families.liveavatar.gpu_bench import build_networks as build_liveavatar
from avatarstream.families.upscaler import Cascade
from avatarstream.models.flashvsr.config import DiTConfig, LQProjConfig, TCDecoderConfig
from avatarstream.models.flashvsr.dit import FlashVSRDiT
from avatarstream.models.flashvsr.lq_proj import LQProjection
from avatarstream.models.flashvsr.tcdecoder import TCDecoder
from avatarstream.models.liveavatar.audio_features import SAMPLE_RATE
from avatarstream.runtime.devices import synchronize
from avatarstream.runtime.launch import RankInfo, finish, init_rank
from avatarstream.runtime.parallel.groups import ParallelGroups
from avatarstream.weights.meta_load import empty_weights

DTYPE = torch.bfloat16
RESULT_FILE = "cascade-gpu.json"
REAL_TEXT_LEN = 512
RESIDENCIES = {"resident": {"default": "resident"}, "dits-offloaded": {"dit": "offloaded", "flashvsr_dit": "offloaded", "default": "resident"}}


@dataclass(frozen=True)
class Plan:
    size: tuple[int, int]  # the base model's (width, height); FlashVSR's output is 4x
    seconds: float
    tiny: bool


REAL_PLAN = Plan((320, 192), 6.0, tiny=False)
TINY_PLAN = Plan((64, 64), 1.5, tiny=True)


def build_flashvsr(tiny: bool, device: torch.device, dtype: torch.dtype, seed: int = 1) -> FlashVSRNetworks:
    """FlashVSR's DiT, LQ projection, TCDecoder and prompt with random weights on ``device`` (real or tiny sizes)."""
    dit_config, lq_config, tcd_config = (TINY_DIT, TINY_LQ_PROJ, TINY_TCDECODER) if tiny else (DiTConfig(), LQProjConfig(), TCDecoderConfig())
    with empty_weights():
        dit, lq_proj, decoder = FlashVSRDiT(dit_config), LQProjection(lq_config), TCDecoder(tcd_config)
    generator = torch.Generator(device).manual_seed(seed)
    for network in (dit, lq_proj, decoder):
        gpu_run.materialize(network, device, dtype, generator)
    prompt = torch.randn(1, TINY_TEXT_LEN if tiny else REAL_TEXT_LEN, dit_config.text_dim, generator=generator, device=device).to(dtype)
    return FlashVSRNetworks(dit, lq_proj, decoder, prompt)


def _build(cascade: Cascade, plan: Plan, residency: str, device: torch.device, parallel: ParallelGroups) -> Any:
    options = {"size": list(plan.size), "steps": 2} if plan.tiny else {"size": list(plan.size)}
    pipeline = build_pipeline(cascade, device, options, residency=RESIDENCIES[residency], overlap=True, read_ahead=True, parallel=parallel)
    pipeline.prepare()
    return pipeline


def run_scenario(cascade: Cascade, plan: Plan, residency: str, device: torch.device, parallel: ParallelGroups) -> dict[str, Any]:
    layout = parallel.layout.text() if parallel.distributed else None
    describe = {"base_size": list(plan.size), "residency": RESIDENCIES[residency], "audio_s": plan.seconds, "parallel": layout}
    pipeline, pipeline_size = None, None
    try:
        pipeline = _build(cascade, plan, residency, device, parallel)
        pipeline_size = pipeline.frame_size
        synchronize(device)
        gpu_run.reset_device_peak(device)
        reference = cascade.reference(None, {"size": list(plan.size)})
        report = measure(pipeline, reference, looped(bundled_speech(SAMPLE_RATE), SAMPLE_RATE, plan.seconds))
    except RuntimeError as exc:
        if not gpu_run.is_out_of_memory(exc):
            raise
        return {**describe, "status": "skipped", "reason": f"out of memory: {str(exc).splitlines()[0]}"}
    finally:
        if pipeline is not None:
            pipeline.runtime.close()
        del pipeline
        gpu_run.back_on_device((module.network for module in cascade.modules.values()), device)
    peak = report["peak_device_bytes"]
    keep = ("ttff_s", "fps_out", "realtime_factor", "wall_s", "frames", "num_chunks", "stage_seconds", "stage_switches", "peak_rss_bytes")
    return {**describe, "status": "ok", "size": pipeline_size, **{k: report[k] for k in keep}, "peak_device_bytes": peak,
            "peak_device_gib": round(peak / gpu_run.GIB, 2) if peak is not None else None}  # fmt: skip


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = gpu_run.run_parser(__doc__.split("\n\n")[0], RESULT_FILE, 150.0, "start no scenario after this many seconds")
    parser.add_argument("--parallel", metavar="LAYOUT", help="under torchrun: the --parallel layout of one all-resident scenario (decode)")
    args = parser.parse_args(argv)
    progress, device = gpu_run.start_run(parser, args)
    info, device = init_rank(device, args.parallel)
    try:
        return _run(args, progress, device, info)
    finally:
        finish(info)


def _run(args: argparse.Namespace, progress: gpu_run.Progress, device: torch.device, info: RankInfo) -> dict[str, Any]:
    plan = TINY_PLAN if args.tiny else REAL_PLAN
    dtype = DTYPE if device.type == "cuda" else torch.float32  # a CPU dry run measures nothing: fp32 is faster there
    progress(f"building {'tiny' if args.tiny else 'real'} LiveAvatar and FlashVSR networks on {device} in {dtype}")
    start = time.perf_counter()
    base = LiveAvatarFamily.from_networks(build_liveavatar(args.tiny, device, dtype), "random weights")
    networks = build_flashvsr(args.tiny, device, dtype)
    upscaler = FlashVSRUpscaler(networks, modules_of(networks), "random weights")
    cascade = Cascade(base, upscaler, FlashVSROptions())
    synchronize(device)
    if not info.publishes:
        pipeline = _build(cascade, plan, "resident", device, info.groups)
        try:
            pipeline.follow()
        finally:
            pipeline.runtime.close()
        return {}
    args.out.mkdir(parents=True, exist_ok=True)
    element = torch.finfo(dtype).bits // 8
    result: dict[str, Any] = {
        "benchmark": "cascade-gpu",
        "environment": gpu_run.environment(device),
        "tiny": args.tiny,
        "dtype": str(dtype).removeprefix("torch."),
        "weight_bytes": {"liveavatar": sum(m.size_bytes for m in base.modules.values()), "flashvsr": sum(m.size_bytes for m in upscaler.modules.values())},
        "flashvsr_session_bytes": vars(session_bytes(*plan.size, networks.dit.config, FlashVSROptions().settings().kv_ratio, element)),
        "build_s": round(time.perf_counter() - start, 3),
        "processes": info.world_size,
        "scenarios": {},
    }
    path = args.out / RESULT_FILE
    for residency in ["resident"] if info.distributed else list(RESIDENCIES):
        if progress.elapsed > args.budget_s:
            result["scenarios"][residency] = {"status": "skipped", "reason": f"time budget of {args.budget_s:g} s spent"}
            continue
        progress(f"running: {residency}, {plan.size[0]}x{plan.size[1]} -> 4x")
        record = result["scenarios"][residency] = run_scenario(cascade, plan, residency, device, info.groups)
        if record["status"] == "ok":
            progress(f"  -> ttff {record['ttff_s']:.2f} s, {record['fps_out']:.2f} fps, peak {record['peak_device_gib']} GiB")
        else:
            progress(f"  -> skipped: {record['reason']}")
        gpu_run.write_json(path, {**result, "total_s": round(progress.elapsed, 1)})
    result["total_s"] = round(progress.elapsed, 1)
    gpu_run.write_json(path, result)
    progress(f"wrote {path}")
    return result


if __name__ == "__main__":
    main()
