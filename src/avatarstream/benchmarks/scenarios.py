"""Named benchmark scenarios. Each returns a JSON-able dict; plots go next to it."""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any

import numpy as np

from avatarstream.benchmarks import plots
from avatarstream.benchmarks.compare import compare_policies, standard_configs
from avatarstream.benchmarks.contention import measure_contention, measure_load_memory
from avatarstream.benchmarks.context import BenchContext
from avatarstream.benchmarks.parallel_bench import measure_parallel
from avatarstream.benchmarks.soak import SoakFailed, SoakSettings, measure_soak
from avatarstream.benchtools.audio import looped, looped_array
from avatarstream.errors import InputError
from avatarstream.families.base import optional
from avatarstream.families.registry import family_class, names, options_class
from avatarstream.pipeline.observer import RunObserver
from avatarstream.pipeline.pipeline import Pipeline
from avatarstream.publish.media import MediaChunk
from avatarstream.runtime.compiled import compile_seconds, graphs_compiled
from avatarstream.runtime.streamed import has_blocks

#: what the scenarios that render the model in fresh processes or a server need of it
CPU_REAL_TIME = "renders in real time on a CPU with nothing to download"
SPEED_KEYS = ("ttff_s", "fps_out", "realtime_factor", "wall_s", "frames", "duration_s")


def _speed(report: dict[str, Any]) -> dict[str, Any]:
    return {k: report[k] for k in SPEED_KEYS}


def _median_run(ctx: BenchContext, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run with the median real-time factor, plus the spread of all runs."""
    ordered = sorted(runs, key=lambda r: r["realtime_factor"])
    median = dict(ordered[len(ordered) // 2])
    median["realtime_factor_all"] = [round(r["realtime_factor"], 3) for r in runs]
    median["ttff_s_all"] = [round(r["ttff_s"], 4) for r in runs]
    return median


def speed(ctx: BenchContext) -> dict[str, Any]:
    """Time to first frame, fps and real-time factor of ``render`` (encoding included)."""
    family, load_s = ctx.family()
    runs = [ctx.run(family) for _ in range(ctx.repeats)]
    best = _median_run(ctx, runs)
    result = {
        **_speed(best),
        "weights": family.weights,
        "resolution": best["resolution"],
        "load_s": load_s,
        "realtime_factor_all": best["realtime_factor_all"],
        "ttff_s_all": best["ttff_s_all"],
        "stage_seconds": best["stage_seconds"],
        "peak_rss_bytes": best["peak_rss_bytes"],
        "peak_device_bytes": best["peak_device_bytes"],
        "stage_switches": best["stage_switches"],
    }
    result["stage_ms_per_chunk"] = _stage_ms_per_chunk(best)
    plots.stage_bars(ctx.out_dir / "speed-stages.png", result["stage_ms_per_chunk"], "time per stage per executed chunk")
    return result


def _stage_ms_per_chunk(report: dict[str, Any]) -> dict[str, float]:
    chunks = max(len(report["chunks"]), 1)
    return {stage: round(1e3 * seconds / chunks, 3) for stage, seconds in report["stage_seconds"].items()}


def resolution(ctx: BenchContext) -> dict[str, Any]:
    """fps and real-time factor against output resolution (same model widths, larger latents)."""
    ctx.require("resolution_sweep", "resolution", "can be made at several output resolutions with the same widths")
    rows = []
    for size, make in optional(ctx.family()[0], "resolution_sweep")():
        family, _ = ctx.made(make)
        report = _median_run(ctx, [ctx.run(family) for _ in range(ctx.repeats)])
        rows.append({"resolution": size, **_speed(report)})
    plots.lines(
        ctx.out_dir / "resolution.png",
        [r["resolution"] for r in rows],
        {"fps": [r["fps_out"] for r in rows], "real-time factor": [r["realtime_factor"] for r in rows]},
        xlabel="output resolution (square, px)",
        title="speed against resolution",
    )
    return {"rows": rows}


def overhead(ctx: BenchContext) -> dict[str, Any]:
    """Framework overhead: the pipeline against the same models in a plain loop, interleaved, no encoding."""
    ctx.require("raw_frames", "overhead", "offers a plain loop of its networks to compare the pipeline with")
    family, _ = ctx.family()
    raw = partial(optional(family, "raw_frames"), options=ctx.options.given("build", "request"))  # (reference image, samples) -> frames
    rate = ctx.pipeline(family, compile=False).model_sample_rate
    pipe_s, raw_s, loop_pct, identical = [], [], [], True
    for _ in range(ctx.repeats):
        report = ctx.run(family, encode=False, keep_frames=True)
        samples = looped_array(ctx.speech(rate), rate, ctx.seconds)
        width, height = report["resolution"]
        reference = ctx.reference((width, height))
        pipe_s.append(report["wall_s"])
        loop_pct.append(100 * (report["wall_s"] - sum(report["stage_seconds"].values())) / report["wall_s"])
        start = time.perf_counter()
        frames = np.concatenate(list(raw(reference, samples)))
        raw_s.append(time.perf_counter() - start)
        identical &= bool(np.array_equal(frames, report["frames_array"]))
    pipe, raw_t = statistics.median(pipe_s), statistics.median(raw_s)
    return {
        "pipeline_s": pipe,
        "raw_loop_s": raw_t,
        "pipeline_s_all": pipe_s,
        "raw_loop_s_all": raw_s,
        "overhead_pct": 100 * (pipe - raw_t) / pipe,
        "loop_outside_stages_pct": statistics.median(loop_pct),
        "identical_frames": identical,
    }


def memory(ctx: BenchContext) -> dict[str, Any]:
    """RSS (and device memory) per chunk over a long session: it must draw a flat line."""
    family, _ = ctx.family()
    seconds = ctx.minutes * 60
    report = ctx.run(family, seconds)
    times = np.array([c["timeline"][1] for c in report["chunks"]]) / family.fps
    rss = np.array([c["rss_bytes"] for c in report["chunks"]], dtype=np.float64)
    window = min(300.0, seconds / 6)
    first, last = rss[times <= window].max(), rss[times >= seconds - window].max()
    plots.lines(
        ctx.out_dir / "memory.png",
        list(times / 60),
        {"RSS (MiB)": list(rss / 2**20)},
        xlabel="session time (min)",
        title=f"resident memory per chunk over {ctx.minutes:g} min",
    )
    return {
        **_speed(report),
        "session_minutes": ctx.minutes,
        "window_s": window,
        "peak_rss_first_window_bytes": int(first),
        "peak_rss_last_window_bytes": int(last),
        "last_over_first": last / first,
        "peak_device_bytes": report["peak_device_bytes"],
    }


def _compare(ctx: BenchContext, variants: dict[str, dict[str, Any]], check_identical: bool) -> dict[str, Any]:
    """The same family and audio under several pipeline options, runs interleaved."""
    family, _ = ctx.family()
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in variants}
    for _ in range(ctx.repeats):
        for name, options in variants.items():
            runs[name].append(ctx.run(family, keep_frames=check_identical, **options))
    result: dict[str, Any] = {
        name: _speed(_median_run(ctx, r)) | {"realtime_factor_all": [round(x["realtime_factor"], 3) for x in r]} for name, r in runs.items()
    }
    if check_identical:
        first = [r[0]["frames_array"] for r in runs.values()]
        result["identical_frames"] = all(np.array_equal(first[0], f) for f in first[1:])
    return result


def interpolation(ctx: BenchContext) -> dict[str, Any]:
    """What I-chunks cost: the same audio with and without them."""
    ctx.require("seam_smoothing_off", "interpolation", "can switch its seam smoothing (I-chunks) off")
    without = dict(optional(family_class(ctx.model), "seam_smoothing_off"))
    result = _compare(ctx, {"with_i_chunks": {}, "without_i_chunks": without}, check_identical=False)
    result["i_chunk_cost_pct"] = 100 * (result["with_i_chunks"]["wall_s"] / result["without_i_chunks"]["wall_s"] - 1)
    return result


def overlap(ctx: BenchContext) -> dict[str, Any]:
    """Finishing chunk k and preparing chunk k+1's audio features while chunk k generates, against strictly sequential execution."""
    return _compare(ctx, {"sequential": {"overlap": False}, "overlapped": {"overlap": True, "read_ahead": True}}, check_identical=True)


def compiled(ctx: BenchContext) -> dict[str, Any]:
    """torch.compile of the DiT blocks (--compile), against eager: speed, frames, and compile time apart (any family)."""
    family, _ = ctx.family()
    kept = {"keep_frames": True, "encode": False}  # the frames are compared; encoding is the same work either way
    eager = [ctx.run(family, compile=False, **kept) for _ in range(ctx.repeats)]  # first: compiling changes the family's blocks for good
    graphs, start = graphs_compiled(), compile_seconds()
    first = ctx.run(family, compile=True, **kept)  # compiles a graph per chunk shape on the way
    compile_s, graphs, after_first = compile_seconds() - start, graphs_compiled() - graphs, graphs_compiled()
    fast = [ctx.run(family, compile=True, **kept) for _ in range(ctx.repeats)]
    plain, quick = _median_run(ctx, eager), _median_run(ctx, fast)
    diff = np.abs(eager[0]["frames_array"].astype(np.int16) - fast[0]["frames_array"])
    return {
        "eager": _speed(plain),
        "compiled": _speed(quick),
        "first_compiled_run": _speed(first),
        "compile_s": compile_s,
        "graphs_compiled": graphs,
        "recompiles_after_first_run": graphs_compiled() - after_first,
        "max_abs_frame_diff": int(diff.max()),
        "mean_abs_frame_diff": float(diff.mean()),
        "speedup": quick["realtime_factor"] / plain["realtime_factor"],
    }


def residency(ctx: BenchContext) -> dict[str, Any]:
    """Resident, offloaded and streamed weights side by side: same model, same audio, one run."""
    family, _ = ctx.family()
    streamed = [name for name, module in family.modules.items() if has_blocks(module.network)]  # what the streamed policy can stream

    def run(pipeline: Pipeline, observers: Sequence[RunObserver]) -> Iterable[MediaChunk]:
        rate, size = pipeline.model_sample_rate, pipeline.frame_size
        assert size is not None, "a family's pipeline knows its size"
        return pipeline.stream(looped(ctx.speech(rate), rate, ctx.seconds), ctx.reference(size), seed=0, observers=observers)

    # one slot: a network of two blocks or more rotates them through the device
    return compare_policies(lambda config: ctx.pipeline(family, residency=config), standard_configs(streamed, slots=1), run)


def _has_option(model: str, name: str) -> bool:
    """Whether ``model`` declares an option ``name`` (read from its options alone: nothing loads)."""
    try:
        return name in {spec.name for spec in options_class(model).specs()}
    except InputError:
        return False


def motion(ctx: BenchContext) -> dict[str, Any]:
    """Motion frames re-encoded from pixels (the reference's way) against handed over as latents (a model with a motion option)."""
    if not _has_option(ctx.model, "motion"):  # the option that chooses the motion hand-over: reencode or latent
        having = ", ".join(name for name in names() if _has_option(name, "motion")) or "none installed"
        raise InputError(
            f"the motion scenario compares a model's motion hand-over (option motion: reencode or latent); {ctx.model} has none (models that do: {having})"
        )
    result = _compare(ctx, {"reencode": {"motion": "reencode"}, "latent": {"motion": "latent"}}, check_identical=False)
    result["reencode_cost_pct"] = 100 * (result["reencode"]["wall_s"] / result["latent"]["wall_s"] - 1)
    return result


def audio_window(ctx: BenchContext) -> dict[str, Any]:
    """Rolling-window audio features against whole-file features, per window length and look-ahead (a model that measures them)."""
    ctx.require("audio_window_errors", "audio-window", "measures its rolling-window audio features against whole-file ones")
    family, _ = ctx.family()
    pipeline = ctx.pipeline(family)
    samples = looped_array(ctx.speech(pipeline.model_sample_rate), pipeline.model_sample_rate, ctx.seconds)
    spans = [(window, ahead) for window in (2.0, 4.0, 8.0, 16.0) for ahead in (2, 12, 25, 50)]
    errors = optional(family, "audio_window_errors")(pipeline, samples, spans)
    return {"rows": [{"window_s": w, "lookahead_frames": a, **e} for (w, a), e in errors.items()]}


def contention(ctx: BenchContext) -> dict[str, Any]:
    """Renders alone and next to a competing CPU job, per threading setting: the slowdown a shared machine causes."""
    ctx.require("cpu_real_time", "contention", CPU_REAL_TIME)
    result = measure_contention(ctx.model, ctx.seconds, ctx.repeats, ctx.out_dir)
    rows = result["rows"]
    plots.grouped_bars(ctx.out_dir / "contention.png", [r["variant"] for r in rows],
                       {"alone": [r["realtime_factor_alone"] for r in rows], "next to a competing job": [r["realtime_factor_loaded"] for r in rows]},
                       ylabel="real-time factor", title=f"render speed on a shared machine ({result['cores']} cores)")  # fmt: skip
    return result


def load_memory(ctx: BenchContext) -> dict[str, Any]:
    """Peak RSS of a --seconds render and of one 9x as long, both next to a competing CPU job: memory must not grow with length."""
    ctx.require("cpu_real_time", "load-memory", CPU_REAL_TIME)
    return measure_load_memory(ctx.model, ctx.seconds, ctx.repeats, ctx.out_dir)


def soak(ctx: BenchContext) -> dict[str, Any]:
    """The server at its session limit for --minutes with misbehaving clients and a stalling RTMP peer; fails when anything trends upward."""
    if ctx.device.type != "cpu":
        raise InputError("the soak scenario runs the server on the CPU: --device cpu")
    ctx.require("cpu_real_time", "soak", CPU_REAL_TIME)
    result = measure_soak(SoakSettings(model=ctx.model, minutes=ctx.minutes), ctx.out_dir)
    if not result["passed"]:
        failed = [name for name, ok in result["checks"].items() if not ok]
        ctx.out_dir.joinpath("soak.json").write_text(json.dumps(result, indent=2))
        raise SoakFailed(f"the soak failed: {', '.join(failed)} (details in {ctx.out_dir / 'soak.json'})")
    return result


def fleet(ctx: BenchContext) -> dict[str, Any]:
    """Session start and first frame through the fleet vs the single server, and the resume after a lost node (local Ray cluster)."""
    ctx.require("cpu_real_time", "fleet", CPU_REAL_TIME)
    try:
        from avatarstream.benchmarks.fleet_bench import measure_fleet
    except ImportError as err:
        raise InputError(f"the fleet scenario needs Ray Serve ({err.name} is missing): pip install 'avatarstream[fleet]'") from err
    return measure_fleet(ctx.model, max(ctx.repeats, 3), ctx.out_dir)


def parallel(ctx: BenchContext) -> dict[str, Any]:
    """--parallel layouts: the speed-up model's fps and time to first frame for 2, 4 and 8 GPUs, and measured runs of every layout that fits here."""
    return measure_parallel(ctx)


SCENARIOS: dict[str, Callable[[BenchContext], dict[str, Any]]] = {
    "speed": speed,
    "resolution": resolution,
    "overhead": overhead,
    "memory": memory,
    "interpolation": interpolation,
    "overlap": overlap,
    "compile": compiled,
    "residency": residency,
    "motion": motion,
    "audio-window": audio_window,
    "contention": contention,
    "load-memory": load_memory,
    "soak": soak,
    "fleet": fleet,
    "parallel": parallel,
}


def gpu(ctx: BenchContext) -> dict[str, Any]:
    """Production-size speed on one GPU (random weights): time to first frame and fps."""
    if ctx.device.type != "cuda":
        raise InputError("the gpu scenario needs a CUDA device; run it with --device cuda on a GPU machine")
    ctx.require("production_model", "gpu", "can be made at production size with random weights")
    family, load_s = ctx.made(optional(family_class(ctx.model), "production_model"))
    runs = [ctx.run(family) for _ in range(ctx.repeats)]
    best = _median_run(ctx, runs)
    params = {name: module.num_parameters for name, module in family.modules.items()}
    return {
        **_speed(best),
        "load_s": load_s,
        "parameters": params,
        "resolution": best["resolution"],
        "stage_ms_per_chunk": _stage_ms_per_chunk(best),
        "peak_device_bytes": best["peak_device_bytes"],
    }


SCENARIOS["gpu"] = gpu
