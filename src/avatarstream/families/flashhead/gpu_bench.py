"""SoulX-FlashHead Pro and Lite at real size on one GPU: fps, time to first frame, memory, eager and compiled, sessions at once.

Random bf16 weights are built straight on the device (speed does not depend
on their values): the 1.5 B DiT of each variant (dim 1536, 30 layers), Pro's
Wan 2.1 VAE or Lite's LTX-Video VAE, wav2vec2-base. Each scenario renders
looped bundled speech at 512x512 (the presets) as one or several sessions at
once, each streaming on its own thread over the variant's one pipeline, as
``serve`` runs the sessions that share its options. The variant not measured
waits on the host, so peak memory is one variant's. Reported per scenario:
time to first frame, fps, real-time factor, the steady chunk time and the fps
it gives, per-stage time, peak device memory; with several sessions, the
aggregate fps, each session's figures and whether each kept up with 25 fps
in its steady chunks (the slowest session's figures are the scenario's).
``--compile`` is measured after one warm-up chunk that compiles the DiT's
blocks, its time apart (``warm_ups``); a variant's eager scenarios run before
its compiled ones (compiling lasts for the network's life). The JSON is
rewritten after every scenario; none starts after the budget, and one that
fails is reported as failed while the next one runs.

    python -m avatarstream.families.flashhead.gpu_bench --out bench/results/DIR            # a CUDA GPU, ~2 min
    python -m avatarstream.families.flashhead.gpu_bench --out /tmp/x --tiny --device cpu --compile-backend aot_eager   # seconds
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time
import traceback
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from avatarstream.benchtools import gpu_run
from avatarstream.benchtools.audio import bundled_speech, looped
from avatarstream.families.assemble import build_pipeline
from avatarstream.families.flashhead.family import FlashHeadFamily
from avatarstream.families.flashhead.random_networks import DTYPE, build_networks
from avatarstream.models.flashhead.audio_features import FPS, SAMPLE_RATE
from avatarstream.pipeline.observer import ChunkDone, RunObserver
from avatarstream.pipeline.pipeline import Pipeline
from avatarstream.pipeline.report import ReportRecorder, peak_rss_bytes
from avatarstream.runtime.devices import peak_device_bytes, synchronize

RESULT_FILE = "flashhead-gpu.json"


@dataclass(frozen=True)
class Scenario:
    variant: str
    compiled: bool
    sessions: int = 1

    @property
    def name(self) -> str:
        return f"{self.variant} {'compiled' if self.compiled else 'eager'}" + (f" x{self.sessions}" if self.sessions > 1 else "")


#: Most informative first (the Lite claim is three 25+ fps streams on one GPU); a variant's eager ones before its compiled ones.
SCENARIOS = tuple(
    Scenario(v, c, n) for v, c, n in [("lite", False, 1), ("pro", False, 1), ("lite", False, 2), ("lite", False, 3), ("lite", True, 1),
                                      ("pro", True, 1), ("lite", True, 3), ("lite", True, 2), ("pro", True, 2), ("pro", True, 3)]
)  # fmt: skip


@dataclass(frozen=True)
class Plan:
    size: tuple[int, int]
    seconds: float  # of looped speech per session
    tiny: bool


REAL_PLAN = Plan((512, 512), 4.0, tiny=False)
TINY_PLAN = Plan((64, 64), 1.5, tiny=True)


def random_family(variant: str, tiny: bool, device: torch.device) -> FlashHeadFamily:
    """The family around random networks on ``device``: bf16 on a GPU, float32 on a CPU (a dry run; bf16 is slow there)."""
    dtype = DTYPE if device.type == "cuda" else torch.float32
    return FlashHeadFamily.from_networks(build_networks(variant, tiny, device, dtype), f"random {'tiny' if tiny else 'real-size'} {variant} weights")


class ChunkWalls(RunObserver):
    """Each chunk's wall time, in order."""

    def __init__(self) -> None:
        self.seconds: list[float] = []

    def on_chunk(self, done: ChunkDone) -> None:
        self.seconds.append(done.end_s - done.start_s)


def run_session(pipeline: Pipeline, reference: np.ndarray, speech: np.ndarray, seconds: float, seed: int) -> dict[str, Any]:
    """One session's render of ``seconds`` of looped speech, frames dropped; its figures (the device peak is the caller's:
    sessions share it)."""
    recorder, walls = ReportRecorder(), ChunkWalls()
    try:
        for _ in pipeline.stream(looped(speech, SAMPLE_RATE, seconds), reference, seed=seed, observers=[recorder, walls]):
            pass
        report = recorder.summary()
    finally:
        recorder.close()
    steady_s = statistics.median(walls.seconds[1:] or walls.seconds)  # after the first chunk, which also encodes the reference
    steady_fps = round(pipeline.chunk_seconds * FPS / steady_s, 2)
    chunks = max(report["num_chunks"], 1)
    return {
        **{k: report[k] for k in ("ttff_s", "fps_out", "realtime_factor", "wall_s", "frames", "num_chunks")},
        "chunk_s": [round(s, 4) for s in walls.seconds],
        "steady_chunk_s": round(steady_s, 4),
        "steady_fps": steady_fps,
        "keeps_up": steady_fps >= FPS,  # new frames come at least as fast as a live stream plays them
        "stage_ms_per_chunk": {stage: round(1e3 * s / chunks, 3) for stage, s in report["stage_seconds"].items()},
    }


def _pipeline(family: FlashHeadFamily, plan: Plan, device: torch.device, compile_backend: str | None) -> Pipeline:
    pipeline = build_pipeline(family, device, {"size": list(plan.size)}, overlap=True, read_ahead=True)  # as render runs on a GPU
    if compile_backend is not None:
        pipeline.compile(compile_backend)
    pipeline.prepare()
    return pipeline


def warm_up(family: FlashHeadFamily, plan: Plan, device: torch.device, speech: np.ndarray, compile_backend: str | None) -> dict[str, Any]:
    """One chunk before anything of the variant is timed: kernels load, the allocator grows, and (compiled) the blocks compile."""
    pipeline = _pipeline(family, plan, device, compile_backend)
    try:
        start = time.perf_counter()
        run_session(pipeline, family.reference(None, {"size": list(plan.size)}), speech, pipeline.chunk_seconds, seed=0)
        return {"wall_s": round(time.perf_counter() - start, 3), "compile_s": pipeline.runtime.summary()["compile_s"]}
    finally:
        pipeline.runtime.close()


def run_scenario(family: FlashHeadFamily, scenario: Scenario, plan: Plan, device: torch.device, speech: np.ndarray, compile_backend: str) -> dict[str, Any]:
    """``scenario.sessions`` sessions at once on the variant's pipeline, each on its own thread; a configuration that does not
    fit is a skip, not a crash."""
    describe = {"preset": scenario.variant, "size": list(plan.size), "compiled": scenario.compiled, "sessions": scenario.sessions, "audio_s": plan.seconds}
    pipeline = None
    try:
        pipeline = _pipeline(family, plan, device, compile_backend if scenario.compiled else None)
        reference = family.reference(None, {"size": list(plan.size)})
        synchronize(device)
        gpu_run.reset_device_peak(device)
        start = time.perf_counter()
        with ThreadPoolExecutor(scenario.sessions, thread_name_prefix="session") as pool:
            futures = [pool.submit(run_session, pipeline, reference, speech, plan.seconds, seed) for seed in range(scenario.sessions)]
            sessions = [f.result() for f in futures]
        wall_s = time.perf_counter() - start
        peak, compile_s = peak_device_bytes(device), pipeline.runtime.summary()["compile_s"]
    except RuntimeError as exc:
        if not gpu_run.is_out_of_memory(exc):
            raise
        return {**describe, "status": "skipped", "reason": f"out of memory: {str(exc).splitlines()[0]}"}
    finally:
        if pipeline is not None:
            pipeline.runtime.close()
        del pipeline
    slowest = min(sessions, key=lambda s: s["steady_fps"])
    frames = sum(s["frames"] for s in sessions)
    return {
        **describe,
        "status": "ok",
        "ttff_s": max(s["ttff_s"] for s in sessions),
        "fps_out": min(s["fps_out"] for s in sessions),  # each stream's; all of them together: aggregate_fps
        "realtime_factor": min(s["realtime_factor"] for s in sessions),
        "steady_chunk_s": slowest["steady_chunk_s"],
        "steady_fps": slowest["steady_fps"],
        "steady_realtime_factor": round(slowest["steady_fps"] / FPS, 3),
        "all_keep_up": all(s["keeps_up"] for s in sessions),
        "aggregate_fps": round(frames / wall_s, 2),
        "frames": frames,
        "wall_s": round(wall_s, 3),
        "stage_ms_per_chunk": slowest["stage_ms_per_chunk"],
        "peak_device_bytes": peak,
        "peak_device_gib": round(peak / gpu_run.GIB, 2) if peak is not None else None,
        "peak_rss_bytes": peak_rss_bytes(),
        "compile_s": compile_s,  # compiling in this render (the warm-up compiled): above 0, a shape the warm-up did not see
        "per_session": sessions,
    }


def only_on_device(families: dict[str, FlashHeadFamily], variant: str, device: torch.device) -> None:
    """``variant``'s networks on ``device``, every other variant's on the host: a scenario's peak memory is its own variant's."""
    for name, family in families.items():
        if name != variant:
            for module in family.modules.values():
                module.network.to("cpu")
    gpu_run.back_on_device((module.network for module in families[variant].modules.values()), device)


def headline(record: dict[str, Any]) -> str:
    if record["status"] != "ok":
        return f"skipped: {record['reason']}"
    sessions = f", {record['aggregate_fps']:.1f} fps together, all keep up: {record['all_keep_up']}" if record["sessions"] > 1 else ""
    return (
        f"ttff {record['ttff_s']:.2f} s, {record['fps_out']:.2f} fps, steady {record['steady_fps']:.1f} fps "
        f"({record['steady_chunk_s']:.3f} s/chunk), peak {record['peak_device_gib']} GiB{sessions}"
    )


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = gpu_run.run_parser(__doc__.split("\n\n")[0], RESULT_FILE, 100.0, "start no scenario after this many seconds; the rest are reported as skipped")
    parser.add_argument("--scenarios", help=f"comma-separated scenarios to run, of: {', '.join(s.name for s in SCENARIOS)} (default: all, in that order)")
    parser.add_argument("--compile-backend", default="inductor", help="torch.compile backend of the compiled scenarios (aot_eager: a quick CPU dry run)")
    args = parser.parse_args(argv)
    progress, device = gpu_run.start_run(parser, args)
    scenarios = _chosen(parser, args.scenarios)
    plan = TINY_PLAN if args.tiny else REAL_PLAN
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / RESULT_FILE

    progress(f"building {'tiny' if args.tiny else 'real-size'} networks on {device}")
    start = time.perf_counter()
    families = {v: random_family(v, args.tiny, device) for v in dict.fromkeys(s.variant for s in scenarios)}
    synchronize(device)
    result: dict[str, Any] = {
        "benchmark": "flashhead-gpu",
        "environment": gpu_run.environment(device),
        "tiny": args.tiny,
        "dtype": str(DTYPE if device.type == "cuda" else torch.float32).removeprefix("torch."),
        "parameters": {v: {name: m.num_parameters for name, m in f.modules.items()} for v, f in families.items()},
        "weight_bytes": {v: sum(m.size_bytes for m in f.modules.values()) for v, f in families.items()},
        "build_s": round(time.perf_counter() - start, 3),
        "budget_s": args.budget_s,
        "plan": dataclasses.asdict(plan),
        "compiled": args.compile_backend if any(s.compiled for s in scenarios) else None,
        "warm_ups": {},  # wall and compile seconds of the chunk before a variant's first eager and first compiled scenario
        "scenarios": {},
    }
    progress(f"built in {result['build_s']:.1f} s: " + ", ".join(f"{v} {b / gpu_run.GIB:.2f} GiB" for v, b in result["weight_bytes"].items()))
    speech = bundled_speech(SAMPLE_RATE)
    for scenario in scenarios:
        if progress.elapsed > args.budget_s:
            result["scenarios"][scenario.name] = {"status": "skipped", "reason": f"time budget of {args.budget_s:g} s spent"}
            continue
        family = families[scenario.variant]
        only_on_device(families, scenario.variant, device)
        mode = f"{scenario.variant} {'compiled' if scenario.compiled else 'eager'}"
        try:
            if mode not in result["warm_ups"]:
                progress(f"warm-up: {mode}, one chunk")
                result["warm_ups"][mode] = warm_up(family, plan, device, speech, args.compile_backend if scenario.compiled else None)
            progress(f"running: {scenario.name} at {plan.size[0]}x{plan.size[1]}")
            record = run_scenario(family, scenario, plan, device, speech, args.compile_backend)
        except Exception as exc:  # noqa: BLE001 - reported, and the next scenario runs: a first GPU run must not lose the rest to one
            traceback.print_exc()
            record = {"status": "failed", "reason": f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0]}"}
        result["scenarios"][scenario.name] = record
        progress(f"  -> {headline(record)}")
        gpu_run.write_json(path, {**result, "total_s": round(progress.elapsed, 1)})
    result["total_s"] = round(progress.elapsed, 1)
    gpu_run.write_json(path, result)
    progress(f"wrote {path}")
    return result


def _chosen(parser: argparse.ArgumentParser, names: str | None) -> Sequence[Scenario]:
    """The scenarios ``--scenarios`` names, in the benchmark's order; an unknown name is the parser's error."""
    if not names:
        return SCENARIOS
    wanted = {n.strip() for n in names.split(",")}
    unknown = sorted(wanted - {s.name for s in SCENARIOS})
    if unknown:
        parser.error(f"--scenarios: unknown {unknown}; choose of {', '.join(s.name for s in SCENARIOS)}")
    return [s for s in SCENARIOS if s.name in wanted]


if __name__ == "__main__":
    main()
