"""GPU check of the runtime (issue 5): one CUDA GPU, under 5 minutes, one JSON result.

Measures
  1. host-to-device bandwidth from pageable and from pinned memory;
  2. the streamed policy's overhead against resident on a 1.5 B-parameter
     A2V DiT (random bf16 weights) at a 720p-sized latent (90 x 160), per forward;
  3. the exposed stage-switch time (CUDA events, the runtime's own timer) in a
     chunk loop that alternates the A2V DiT (several denoising steps) and a
     0.28 B SR DiT, under several residency configs, with and without the
     pipeline's per-stage synchronize.

Usage (from the repository root):
  bench/gpu_check.sh                        # writes bench/results/gpu_check.json
  bench/gpu_check.sh --out /tmp/check.json  # any option below passes through
  python bench/gpu_check.py --device cpu --smoke --out /tmp/smoke.json   # tiny sizes, for tests
Nothing in it is specific to one GPU model: it runs unchanged on an H100 or an H200.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from avatarstream.models.demo import A2VDiT, DemoConfig, DiTConfig, SRConfig, SRDiT
from avatarstream.runtime.devices import synchronize
from avatarstream.runtime.module import Module
from avatarstream.runtime.placement import gpu_bus_id, plan_binding
from avatarstream.runtime.residency import Runtime

SWITCH_BUDGET_MS = 10.0


@dataclasses.dataclass(frozen=True)
class Sizes:
    """Everything that differs between the real check and the CPU smoke run."""

    config: DemoConfig
    latent: tuple[int, int]  # A2V latent for the overhead check (720p / 8)
    frames: tuple[int, ...]  # latent frames per forward in the overhead check
    base_latent: tuple[int, int]  # A2V latent in the chunk loop; SR doubles it
    chunk_frames: int
    steps: int
    chunks: int
    bandwidth_bytes: int


FULL = Sizes(
    config=DemoConfig(dit=DiTConfig(dim=1536, layers=24, heads=12, mlp_ratio=4.0), sr=SRConfig(dim=1024, layers=12, heads=8, mlp_ratio=4.0)),
    latent=(90, 160),
    frames=(1, 4),
    base_latent=(46, 80),  # ~720p after SR (a multiple of the patch size)
    chunk_frames=4,
    steps=4,
    chunks=4,
    bandwidth_bytes=1 << 30,
)
SMOKE = Sizes(
    config=dataclasses.replace(
        DemoConfig.tiny(), dit=dataclasses.replace(DemoConfig.tiny().dit, layers=3), sr=dataclasses.replace(DemoConfig.tiny().sr, layers=2)
    ),
    latent=(8, 12),
    frames=(2,),
    base_latent=(4, 6),
    chunk_frames=2,
    steps=2,
    chunks=2,
    bandwidth_bytes=8 << 20,
)


def timed(device: torch.device, fn: Callable[[], Any]) -> float:
    """Seconds ``fn`` takes, with the device drained before and after."""
    synchronize(device)
    start = time.perf_counter()
    fn()
    synchronize(device)
    return time.perf_counter() - start


# -- 1. bandwidth ---------------------------------------------------------------------------------


def bandwidth(device: torch.device, nbytes: int, reps: int = 5) -> dict[str, Any]:
    """GB/s host-to-device from pageable and (GPU only) pinned memory."""
    dst = torch.empty(nbytes, dtype=torch.uint8, device=device)
    result: dict[str, Any] = {"bytes": nbytes, "reps": reps}
    sources = {"pageable": torch.ones(nbytes, dtype=torch.uint8)}
    if device.type == "cuda":
        sources["pinned"] = torch.ones(nbytes, dtype=torch.uint8, pin_memory=True)
    for name, src in sources.items():
        dst.copy_(src, non_blocking=True)  # warm-up
        seconds = timed(device, lambda src=src: [dst.copy_(src, non_blocking=True) for _ in range(reps)])
        result[f"{name}_GBps"] = round(reps * nbytes / seconds / 1e9, 2)
    if "pinned_GBps" in result:
        result["pinned_speedup"] = round(result["pinned_GBps"] / result["pageable_GBps"], 2)
    return result


# -- models and inputs ----------------------------------------------------------------------------


def build(name: str, factory: Callable[[], torch.nn.Module], device: torch.device, dtype: torch.dtype) -> Module:
    """Random weights initialised on the device (fast even at 1.5 B parameters)."""
    with torch.device(device):
        network = factory().to(dtype)
    return Module(name, network)


def a2v_inputs(cfg: DemoConfig, frames: int, latent: tuple[int, int], device: torch.device, dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    h, w = latent
    c, p = cfg.vae.latent_channels, cfg.dit.patch_size
    g = torch.Generator(device).manual_seed(0)

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g, device=device, dtype=dtype)

    mask = torch.zeros(1, frames, device=device, dtype=dtype)
    mask[:, 0] = 1
    return (
        randn(1, c, frames, h, w),
        randn(1, c, frames, h, w),
        mask,
        torch.full((1,), 0.5, device=device, dtype=dtype),
        randn(1, frames, cfg.audio.tokens_per_frame, cfg.audio.dim),
        randn(1, 16, cfg.text.dim),
        randn(1, cfg.reference.global_tokens + (h // p) * (w // p), cfg.dit.dim),
    )


def sr_inputs(cfg: DemoConfig, frames: int, base: tuple[int, int], device: torch.device, dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    h, w = base
    c = cfg.vae.latent_channels
    g = torch.Generator(device).manual_seed(1)
    return (
        torch.randn(1, c, frames, h, w, generator=g, device=device, dtype=dtype),
        torch.randn(1, c, 2 * h, 2 * w, generator=g, device=device, dtype=dtype),
        torch.randn(1, c, frames, 2 * h, 2 * w, generator=g, device=device, dtype=dtype),
    )


# -- 2. streamed against resident ----------------------------------------------------------------


def forward_cost(module: Module, policy: str, inputs: tuple[torch.Tensor, ...], device: torch.device, steps: int) -> dict[str, Any]:
    """Mean seconds per forward (after one warm-up forward) with the module under ``policy``."""
    runtime = Runtime(device, {module.name: policy})
    try:
        runtime.stage_starts("a2v", (module,), ())
        with torch.inference_mode():
            module.network(*inputs)
            runtime.take_chunk_stats()
            seconds = timed(device, lambda: [module.network(*inputs) for _ in range(steps)])
        stats = runtime.take_chunk_stats()
        runtime.stage_ends("a2v", (module,))
    finally:
        runtime.close()
    return {
        "ms_per_forward": round(1e3 * seconds / steps, 3),
        "h2d_bytes_per_forward": stats["h2d_bytes"] // steps,
        "peak_device_bytes": stats["peak_device_bytes"],
        "peak_weight_bytes": stats["peak_weight_bytes"],
    }


def streamed_overhead(sizes: Sizes, device: torch.device, dtype: torch.dtype, slots: tuple[int, ...] = (2, 3)) -> dict[str, Any]:
    cfg = sizes.config
    module = build("a2v_dit", lambda: A2VDiT(cfg), device, dtype)
    block_bytes = sum(p.numel() * p.element_size() for p in module.network.blocks[0].parameters())
    result: dict[str, Any] = {
        "model": {
            "params": module.num_parameters,
            "dim": cfg.dit.dim,
            "layers": cfg.dit.layers,
            "block_bytes": block_bytes,
            "dtype": str(dtype).removeprefix("torch."),
            "latent": list(sizes.latent),
        },
        "runs": [],
    }
    for frames in sizes.frames:
        inputs = a2v_inputs(cfg, frames, sizes.latent, device, dtype)
        resident = forward_cost(module, "resident", inputs, device, sizes.steps)
        run: dict[str, Any] = {"frames": frames, "tokens": frames * (sizes.latent[0] // 2) * (sizes.latent[1] // 2), "resident": resident}
        for n in slots:
            streamed = forward_cost(module, f"streamed:{n}", inputs, device, sizes.steps)
            streamed["overhead_pct"] = round(100 * (streamed["ms_per_forward"] / resident["ms_per_forward"] - 1), 2)
            run[f"streamed:{n}"] = streamed
        result["runs"].append(run)
        del inputs
    return result


# -- 3. exposed stage switch ---------------------------------------------------------------------


def switch_loop(
    modules: dict[str, Module], config: dict[str, str], inputs: dict[str, tuple], device: torch.device, sizes: Sizes, *, sync: bool
) -> dict[str, Any]:
    """The pipeline's sequence of runtime calls for A2V (``steps`` forwards) and SR, chunk after chunk."""
    runtime = Runtime(device, config)
    stages = [("audio_to_video", modules["a2v_dit"], sizes.steps), ("super_resolution", modules["sr_dit"], 1)]
    try:
        runtime.bind(modules.values())
        runtime.acquire(modules.values())  # what Pipeline.prepare() does
        runtime.release(modules.values())
        runtime.take_chunk_stats()
        per_chunk = []
        for _ in range(sizes.chunks + 1):  # the first chunk warms up and is not counted
            for i, (stage, module, calls) in enumerate(stages):
                following = stages[(i + 1) % len(stages)][1]
                runtime.stage_starts(stage, (module,), (following,))
                with torch.inference_mode():
                    for _ in range(calls):
                        module.network(*inputs[module.name])
                runtime.stage_ends(stage, (module,))
                if sync:
                    synchronize(device)  # Pipeline._run_stage does this after every stage
            per_chunk.append(runtime.take_chunk_stats())
        summary = runtime.switch_summary()
    finally:
        runtime.close()
    worst = max((s["max_ms"] for s in summary.values()), default=0.0)
    counted = per_chunk[1:]
    return {
        "config": config,
        "pipeline_sync_after_each_stage": sync,
        "switches": summary,
        "max_exposed_ms": round(worst, 3),
        "h2d_bytes_per_chunk": max(c["h2d_bytes"] for c in counted),
        "peak_device_bytes": max((c["peak_device_bytes"] or 0) for c in counted) or None,
        "peak_weight_bytes": max(c["peak_weight_bytes"] for c in counted),
    }


def stage_switch(sizes: Sizes, device: torch.device, dtype: torch.dtype) -> dict[str, Any]:
    cfg = sizes.config
    modules = {
        "a2v_dit": build("a2v_dit", lambda: A2VDiT(cfg), device, dtype),
        "sr_dit": build("sr_dit", lambda: SRDiT(cfg), device, dtype),
    }
    inputs = {
        "a2v_dit": a2v_inputs(cfg, sizes.chunk_frames, sizes.base_latent, device, dtype),
        "sr_dit": sr_inputs(cfg, sizes.chunk_frames, sizes.base_latent, device, dtype),
    }
    configs = {
        "resident": {},
        "a2v streamed:2, sr offloaded": {"a2v_dit": "streamed:2", "sr_dit": "offloaded"},
        "a2v streamed:2, sr streamed:2": {"a2v_dit": "streamed:2", "sr_dit": "streamed:2"},
        "both offloaded": {"default": "offloaded"},
    }
    runs = {
        f"{label} | sync={sync}": switch_loop(modules, config, inputs, device, sizes, sync=sync) for label, config in configs.items() for sync in (True, False)
    }
    worst_streamed = max(r["max_exposed_ms"] for label, r in runs.items() if "streamed" in label)
    return {
        "a2v_params": modules["a2v_dit"].num_parameters,
        "sr_params": modules["sr_dit"].num_parameters,
        "base_latent": list(sizes.base_latent),
        "chunk_frames": sizes.chunk_frames,
        "steps": sizes.steps,
        "budget_ms": SWITCH_BUDGET_MS,
        "streamed_configs_within_budget": worst_streamed < SWITCH_BUDGET_MS,
        "runs": runs,
    }


# -- main -----------------------------------------------------------------------------------------


def environment(device: torch.device) -> dict[str, Any]:
    info: dict[str, Any] = {"torch": torch.__version__, "python": platform.python_version(), "device": str(device)}
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        info.update(gpu=props.name, memory_bytes=props.total_memory, capability=f"{props.major}.{props.minor}", cuda=torch.version.cuda)
        info["numa"] = dataclasses.asdict(plan_binding(gpu_bus_id(device.index)))
    return info


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda", help="cuda (the check) or cpu (smoke runs only)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/gpu_check.json", help="where the JSON result goes")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: checks that the script runs, measures nothing useful")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        parser.error("no CUDA GPU visible; this check needs one (use --device cpu --smoke to test the script)")
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    sizes = SMOKE if args.smoke else FULL
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32

    started = time.perf_counter()
    result: dict[str, Any] = {"check": "runtime gpu check (issue 5)", "smoke": args.smoke, "environment": environment(device)}
    sections = {
        "h2d_bandwidth": lambda: bandwidth(device, sizes.bandwidth_bytes),
        "streamed_vs_resident": lambda: streamed_overhead(sizes, device, dtype),
        "stage_switch": lambda: stage_switch(sizes, device, dtype),
    }
    for name, section in sections.items():
        section_start = time.perf_counter()
        result[name] = section()
        result[name]["seconds"] = round(time.perf_counter() - section_start, 2)
        print(f"{name}: done in {result[name]['seconds']} s", flush=True)
        if device.type == "cuda":
            torch.cuda.empty_cache()
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")  # after every section: a run cut short keeps what it measured
    result["elapsed_s"] = round(time.perf_counter() - started, 2)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out} ({result['elapsed_s']} s)")
    return result


if __name__ == "__main__":
    main()
