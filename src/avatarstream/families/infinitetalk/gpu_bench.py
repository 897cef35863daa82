"""InfiniteTalk at its real 14B size on one GPU: time to first frame, fps, per-stage time, memory, switch time.

The weights are random bf16 (speed does not depend on their values), built
straight on the device: every network is constructed with meta parameters,
then ``to_empty`` gives it device memory in its final dtype and the values are
drawn there, so nothing of the 25 B parameters ever exists on the host and
building takes seconds, not the minutes a download and load would. Buffers
computed in ``__init__`` (the DiT's rotary tables, CLIP's position ids) are
built on the host, where they are small, and copied over.

Scenarios: the ``flashtalk`` preset at 768x448 and 832x480 under four
residency configurations, and one chunk of the ``infinitetalk`` preset (40
guided steps) at 832x480, of which only a few steps are run and the rest
extrapolated (all 40 would take minutes on one GPU). A configuration that runs
out of device memory, or whose pinned weights would not fit in host memory, is
reported as skipped; so is everything left once the time budget is spent. The
JSON is rewritten after every scenario, so a run cut short keeps what it
measured. ``--sync-debug warn`` counts, by line, what made the host wait in each
render's steady state (``steady_host_waits``); ``error`` stops at the first.

    python -m avatarstream.families.infinitetalk.gpu_bench --out bench/results/DIR            # a CUDA GPU, ~6 min
    python -m avatarstream.families.infinitetalk.gpu_bench --out /tmp/x --tiny --device cpu   # tiny networks, seconds
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import psutil
import torch
from transformers import CLIPVisionConfig, CLIPVisionModel, UMT5Config, UMT5EncoderModel, Wav2Vec2Config, Wav2Vec2Model

from avatarstream.benchtools.audio import bundled_speech, looped
from avatarstream.benchtools.gpu_run import (
    GIB,
    Progress,
    back_on_device,
    environment,
    is_out_of_memory,
    materialize,
    reset_device_peak,
    run_parser,
    start_run,
    write_json,
)
from avatarstream.benchtools.measure import measure, stage_named_for
from avatarstream.components.wan.text_encoder import TextEncoder, umt5_config
from avatarstream.components.wan.tiny_text_encoder import T5_BUCKETS, T5_FFN, T5_HEADS, T5_LAYERS, umt5_tokenizer
from avatarstream.components.wan.vae import build_vae
from avatarstream.errors import InputError
from avatarstream.families.assemble import build_pipeline
from avatarstream.families.infinitetalk.family import InfiniteTalkFamily
from avatarstream.families.infinitetalk.networks import InfiniteTalkNetworks
from avatarstream.families.infinitetalk.options import InfiniteTalkOptions
from avatarstream.families.infinitetalk.presets import PRESETS
from avatarstream.families.infinitetalk.tiny import TINY, TINY_WAV2VEC2
from avatarstream.families.infinitetalk.tiny_image_encoder import CLIP_IMAGE, CLIP_LAYERS, CLIP_PATCH
from avatarstream.models.infinitetalk.audio_features import FPS, SAMPLE_RATE, resample_to_video_rate
from avatarstream.models.infinitetalk.config import InfiniteTalkConfig
from avatarstream.models.infinitetalk.dit import FP32_PARAMETERS, InfiniteTalkDiT
from avatarstream.models.infinitetalk.image_encoder import ImageEncoder, clip_vision_config
from avatarstream.runtime.devices import synchronize
from avatarstream.runtime.packing import module_tensors
from avatarstream.runtime.streamed import blocks_of
from avatarstream.runtime.sync_debug import MODES, steady_sync_debug
from avatarstream.weights.meta_load import empty_weights

#: The real checkpoint's dtype, on the CPU dry run too: it is where dtype mistakes show before GPU time is spent.
DTYPE = torch.bfloat16
RESULT_FILE = "infinitetalk-gpu.json"
#: Residency configurations measured, in the order they run (host-memory-hungry ones last).
RESIDENCIES: dict[str, dict[str, str]] = {
    "resident": {"default": "resident"},
    "text_encoder_offloaded": {"text_encoder": "offloaded", "default": "resident"},
    "dit_streamed_2": {"dit": "streamed:2", "default": "resident"},
    "offloaded": {"default": "offloaded"},
}
NOT_RUN = {"sharded": "needs torchrun and several GPUs; this benchmark measures one"}
#: Host memory left alone when judging whether a configuration's pinned weights fit.
HOST_RESERVE = 8 * GIB
# -- sizes and scenarios --------------------------------------------------------------------------


@dataclass(frozen=True)
class NetworkSizes:
    """Every size the five networks are built with."""

    model: InfiniteTalkConfig
    audio: Wav2Vec2Config
    text: UMT5Config
    image: CLIPVisionConfig


def real_sizes() -> NetworkSizes:
    """Wan2.1-I2V-14B + InfiniteTalk, chinese-wav2vec2-base (wav2vec2-base sizes), UMT5-XXL, CLIP ViT-H/14."""
    return NetworkSizes(InfiniteTalkConfig.real(), Wav2Vec2Config(), umt5_config(), clip_vision_config())


def tiny_sizes() -> NetworkSizes:
    """The tiny checkpoint's sizes (``tiny.py`` and the tiny encoders it writes), for CPU dry runs."""
    text_dim, clip_dim = TINY.dit.text_dim, TINY.dit.clip_dim
    vocab = -(-len(umt5_tokenizer()) // 128) * 128
    return NetworkSizes(
        TINY,
        Wav2Vec2Config(**TINY_WAV2VEC2),
        umt5_config(
            vocab_size=vocab, d_model=text_dim, num_layers=T5_LAYERS, num_heads=T5_HEADS, d_kv=text_dim // T5_HEADS, d_ff=T5_FFN, num_buckets=T5_BUCKETS
        ),
        clip_vision_config(
            hidden_size=clip_dim,
            num_layers=CLIP_LAYERS,
            intermediate_size=4 * clip_dim,
            patch_size=CLIP_PATCH,
            image_size=CLIP_IMAGE,
            projection_dim=clip_dim // 2,
        ),
    )


@dataclass(frozen=True)
class Scenario:
    """One measured render: a preset at a size under a residency configuration."""

    preset: str
    size: tuple[int, int]
    residency: str
    seconds: float  # of looped speech
    steps: int | None = None  # None: the preset's

    @property
    def name(self) -> str:
        steps = f" {self.steps} steps" if self.steps is not None else ""
        return f"{self.preset} {self.size[0]}x{self.size[1]} {self.residency}{steps}"

    def options(self) -> InfiniteTalkOptions:
        return InfiniteTalkOptions(preset=self.preset, size=self.size, steps=self.steps)


@dataclass(frozen=True)
class Plan:
    """What one benchmark run measures; ``tiny`` shrinks frames so tiny networks run in seconds on a CPU."""

    sizes: tuple[tuple[int, int], ...]  # flashtalk output sizes
    seconds: float  # flashtalk audio per scenario
    infinitetalk_size: tuple[int, int]
    infinitetalk_steps: int  # steps run of the preset's 40; the rest extrapolated
    residencies: tuple[str, ...] = tuple(RESIDENCIES)  # the configurations measured, of RESIDENCIES
    guided: bool = True  # whether the guided preset's chunk runs

    def warmups(self) -> list[Scenario]:
        """One chunk per flashtalk size before anything is timed (kernels load, the allocator grows)."""
        return [Scenario("flashtalk", size, "resident", one_chunk_s("flashtalk")) for size in self.sizes]

    def scenarios(self) -> list[Scenario]:
        """Grouped by residency, so the pinned host buffers of a configuration are reused across sizes."""
        runs = [Scenario("flashtalk", size, residency, self.seconds) for residency in self.residencies for size in self.sizes]
        if self.guided:
            guided = Scenario("infinitetalk", self.infinitetalk_size, "resident", one_chunk_s("infinitetalk"), self.infinitetalk_steps)
            runs.insert(len(self.sizes) if self.residencies[:1] == ("resident",) else 0, guided)  # after the resident runs: nothing has to move
        return runs


def one_chunk_s(preset: str) -> float:
    """Audio that makes exactly one chunk of ``preset`` (its window, the reference frame included)."""
    return PRESETS[preset].chunk_frames / FPS


REAL_PLAN = Plan(sizes=((768, 448), (832, 480)), seconds=5.0, infinitetalk_size=(832, 480), infinitetalk_steps=3)
TINY_PLAN = Plan(sizes=((64, 48), (80, 48)), seconds=1.5, infinitetalk_size=(80, 48), infinitetalk_steps=2)


# -- random networks on the device ----------------------------------------------------------------


def build_networks(sizes: NetworkSizes, device: torch.device, dtype: torch.dtype, seed: int = 0) -> InfiniteTalkNetworks:
    """The five networks with random weights on ``device``; on ``meta`` only their shapes (no memory)."""
    with empty_weights():  # meta parameters, real (small, computed) buffers
        dit = InfiniteTalkDiT(sizes.model.dit, sizes.model.adapter)
        vae = build_vae(sizes.model.vae)
        audio = Wav2Vec2Model(sizes.audio)
        text = UMT5EncoderModel(sizes.text)
        image = CLIPVisionModel(sizes.image)
    text.encoder.embed_tokens.weight = text.shared.weight  # one tied embedding, as the loader leaves it
    if device.type != "meta":
        generator = torch.Generator(device).manual_seed(seed)
        materialize(dit, device, dtype, generator, dit_keeps_fp32)
        for network, precision in ((vae, torch.float32), (audio, torch.float32), (text, dtype), (image, dtype)):  # as the loader: VAE, wav2vec2 in fp32
            materialize(network, device, precision, generator)
    resample_to_video_rate(audio)
    return InfiniteTalkNetworks(dit, vae, audio, TextEncoder(text, umt5_tokenizer()), ImageEncoder(image))


def dit_keeps_fp32(key: str) -> bool:
    """The DiT parameters kept in float32 under bf16, as the loader keeps them."""
    return any(p in key for p in FP32_PARAMETERS)


# -- measuring ------------------------------------------------------------------------------------


def run_scenario(
    family: InfiniteTalkFamily, scenario: Scenario, device: torch.device, speech: np.ndarray, compile_backend: str | None = None, sync_debug: str = "off"
) -> dict[str, Any]:
    """Build, prepare and render ``scenario`` (its DiT's blocks compiled with ``compile_backend``, if given; its steady state
    under CUDA's ``sync_debug`` mode); a configuration that does not fit is a skip, not a crash."""
    pipeline = None
    try:
        start = time.perf_counter()
        # overlap as render does on a GPU; on the CPU dry run too, so that it takes the GPU's code path
        pipeline = build_pipeline(family, device, scenario.options(), residency=RESIDENCIES[scenario.residency], overlap=True, read_ahead=True)
        if compile_backend is not None:
            pipeline.compile(compile_backend)
        build_s = time.perf_counter() - start
        start = time.perf_counter()
        pipeline.prepare()
        synchronize(device)
        prepare_s = time.perf_counter() - start
        reset_device_peak(device)
        with steady_sync_debug(device, sync_debug) as waits:
            report = measure(pipeline, family.reference(None, scenario.options()), looped(speech, SAMPLE_RATE, scenario.seconds))
        init = {stage.name for stage in pipeline.stages if stage.phase == "init"}
        generator = stage_named_for(pipeline.stages, "generate")
        record = summarize(scenario, report, init, generator, pipeline.runtime.summary(), build_s=build_s, prepare_s=prepare_s)
        return {**record, "steady_host_waits": dict(waits)} if sync_debug == "warn" else record
    except RuntimeError as exc:  # torch.OutOfMemoryError is one
        if not is_out_of_memory(exc):
            raise
        return {**describe(scenario), "status": "skipped", "reason": f"out of memory: {str(exc).splitlines()[0]}"}
    finally:
        if pipeline is not None:
            pipeline.runtime.close()
        del pipeline
        back_on_device((module.network for module in family.modules.values()), device)


def describe(scenario: Scenario) -> dict[str, Any]:
    return {"preset": scenario.preset, "size": list(scenario.size), "residency": RESIDENCIES[scenario.residency], "audio_s": scenario.seconds}


def summarize(
    scenario: Scenario, report: dict[str, Any], init_stages: set[str], generator: str, runtime: dict[str, Any], *, build_s: float, prepare_s: float
) -> dict[str, Any]:
    """The figures of one render (``report``) and of its runtime; per chunk too, since that compares across audio lengths."""
    chunks = max(report["num_chunks"], 1)
    switches = report["stage_switches"]
    peak = report["peak_device_bytes"]
    chunk_s = [c["wall_s"] for c in report["chunks"]]
    result = {
        **describe(scenario),
        "status": "ok",
        "build_s": round(build_s, 3),  # the pipeline, and packing the weights of offloaded and streamed modules
        "prepare_s": round(prepare_s, 3),  # weights placed as the policy wants them, as render does before a request
        **{k: report[k] for k in ("ttff_s", "fps_out", "realtime_factor", "wall_s", "frames", "duration_s", "num_chunks")},
        "chunk_s": chunk_s,
        # chunks after the first: what a long session settles to (the first has no motion frames to re-encode)
        "steady_chunk_s": statistics.median(chunk_s[1:] or chunk_s),
        "video_s_per_chunk": video_s_per_chunk(scenario.preset),
        "stage_seconds": report["stage_seconds"],
        "stage_ms_per_chunk": {stage: round(1e3 * s / chunks, 3) for stage, s in report["stage_seconds"].items() if stage not in init_stages},
        "stage_switches": switches,
        "exposed_switch_ms_total": round(sum(s["count"] * s["mean_ms"] for s in switches.values()), 3),
        "max_exposed_switch_ms": round(max((s["max_ms"] for s in switches.values()), default=0.0), 3),
        "peak_device_bytes": peak,
        "peak_device_gib": round(peak / GIB, 2) if peak is not None else None,
        "peak_weight_bytes": runtime["peak_weight_bytes"],  # of the peak, what the policies held in weights
        "peak_rss_bytes": report["peak_rss_bytes"],
        "h2d_bytes": runtime["h2d_bytes"],  # prepare() included
        "compile_s": runtime["compile_s"],  # compiling graphs in this render (the warm-ups compile most)
        "device_syncs": runtime["device_syncs"],
        "host_syncs": runtime["host_syncs"],
    }
    result["steady_realtime_factor"] = result["video_s_per_chunk"] / result["steady_chunk_s"]
    if scenario.steps is not None:
        init_s = sum(s for stage, s in report["stage_seconds"].items() if stage in init_stages)
        result.update(extrapolate(scenario, report, init_s, generator))
    return result


def video_s_per_chunk(preset: str) -> float:
    """Seconds of new video each chunk after the first adds (its window less the motion frames)."""
    settings = PRESETS[preset]
    return (settings.chunk_frames - settings.motion_frames) / FPS


def extrapolate(scenario: Scenario, report: dict[str, Any], init_s: float, generator: str) -> dict[str, Any]:
    """One chunk at the preset's step count from the few steps that ran: every other stage stays, A2V grows per step."""
    assert scenario.steps is not None
    steps = PRESETS[scenario.preset].steps
    per_step = report["stage_seconds"][generator] / scenario.steps
    missing_s = per_step * (steps - scenario.steps)
    chunk_s = report["wall_s"] - init_s + missing_s
    return {
        "steps_run": scenario.steps,
        "preset_steps": steps,
        "seconds_per_step": per_step,  # all guidance predictions of a step, batched in one DiT call
        "ttff_s_at_preset_steps": report["ttff_s"] + missing_s,
        "chunk_s_at_preset_steps": chunk_s,
        "realtime_factor_at_preset_steps": video_s_per_chunk(scenario.preset) / chunk_s,
    }


def pinned_bytes_needed(family: InfiniteTalkFamily, residency: dict[str, str]) -> int:
    """Host memory a configuration packs weights into: each packed group (a module, or a block when streamed)
    rounded up to a power of two, as torch's pinned host allocator rounds every allocation."""
    total = 0
    for name, module in family.modules.items():
        policy = residency.get(name, residency.get("default", "resident")).partition(":")[0]
        if policy == "offloaded":
            total += _power_of_two(_nbytes(module_tensors(module.network)))
        elif policy == "streamed":
            blocks = blocks_of(module.network)
            if blocks is None:
                raise InputError(f"module {name!r} cannot be streamed: it has no 'blocks'")
            total += sum(_power_of_two(_nbytes(module_tensors(block))) for block in blocks)
            total += _power_of_two(_nbytes(module_tensors(module.network, skip=blocks)))
    return total


def _nbytes(tensors: list[torch.Tensor]) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def _power_of_two(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


def host_memory_problem(family: InfiniteTalkFamily, residency: str) -> str | None:
    """Why ``residency`` would not fit in host memory (a host OOM kills the whole run, not just the scenario), or None."""
    need = pinned_bytes_needed(family, RESIDENCIES[residency])
    available = psutil.virtual_memory().available - HOST_RESERVE
    if need <= available:
        return None
    return f"host memory: its pinned weights take {need / GIB:.1f} GiB, {max(available, 0) / GIB:.1f} GiB available (after {HOST_RESERVE / GIB:g} GiB reserve)"


def release_host_cache(device: torch.device) -> None:
    """Return cached pinned host blocks to the system (the host allocator never does it by itself).

    Called between residency configurations, not between sizes of one: the
    next size's packing reuses the same blocks without pinning anew.
    """
    if device.type != "cuda":
        return
    empty = getattr(torch.accelerator, "empty_host_cache", None) or getattr(torch._C, "_host_emptyCache", None)
    if empty is not None:
        empty()


# -- the run --------------------------------------------------------------------------------------


def parameter_counts(networks: InfiniteTalkNetworks) -> dict[str, int]:
    assert networks.text_encoder is not None and networks.image_encoder is not None
    parts = {
        "dit": networks.dit,
        "vae": networks.vae,
        "audio_encoder": networks.audio_encoder,
        "text_encoder": networks.text_encoder.network,
        "image_encoder": networks.image_encoder.network,
    }
    return {name: sum(p.numel() for p in network.parameters()) for name, network in parts.items()}


def run_all(
    plan: Plan,
    family: InfiniteTalkFamily,
    device: torch.device,
    budget_s: float,
    progress: Progress,
    save: Callable[[dict[str, Any]], None],
    compile_backend: str | None = None,
    warmed: dict[str, Any] | None = None,
    sync_debug: str = "off",
) -> dict[str, Any]:
    """Warm up (compiling, with ``compile_backend``; each warm-up's time into ``warmed``), then every scenario in order;
    skips what the budget leaves no time for."""
    speech = bundled_speech(SAMPLE_RATE)
    warmed = {} if warmed is None else warmed
    for warmup in plan.warmups():
        progress(f"warm-up: {warmup.name}")
        start = time.perf_counter()
        record = run_scenario(family, warmup, device, speech, compile_backend)
        warmed[warmup.name] = {"wall_s": round(time.perf_counter() - start, 3), "compile_s": record.get("compile_s")}
    results: dict[str, Any] = {}
    previous, problem = None, None
    for scenario in plan.scenarios():
        if scenario.residency != previous:  # the next size of a configuration reuses its cached pinned blocks
            release_host_cache(device)
            previous, problem = scenario.residency, host_memory_problem(family, scenario.residency)
        if progress.elapsed > budget_s:
            problem = f"time budget of {budget_s:g} s spent"
        if problem is not None:
            results[scenario.name] = {**describe(scenario), "status": "skipped", "reason": problem}
            progress(f"skipped: {scenario.name}: {problem}")
        else:
            progress(f"running: {scenario.name}")
            results[scenario.name] = record = run_scenario(family, scenario, device, speech, compile_backend, sync_debug)
            progress(f"  -> {headline(record)}")
        save(results)
    return results


def headline(record: dict[str, Any]) -> str:
    if record["status"] != "ok":
        return f"skipped: {record['reason']}"
    peak = f", peak {record['peak_device_gib']} GiB" if record["peak_device_gib"] is not None else ""
    return (
        f"ttff {record['ttff_s']:.2f} s, {record['fps_out']:.2f} fps, x{record['realtime_factor']:.3f} real time, {record['steady_chunk_s']:.2f} s/chunk{peak}"
    )


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = run_parser(__doc__.split("\n\n")[0], RESULT_FILE, 390.0, "start no scenario after this many seconds; the rest are reported as skipped")
    parser.add_argument(
        "--infinitetalk-steps", type=int, default=None, help="steps of the guided preset's 40 to run (default 3; each is ~10 s at 480p on an H200)"
    )
    parser.add_argument("--residencies", help=f"comma-separated configurations to measure, of: {', '.join(RESIDENCIES)} (default: all)")
    parser.add_argument("--sizes", help="comma-separated flashtalk sizes WxH (default: the plan's)")
    parser.add_argument("--no-guided", action="store_true", help="leave out the guided infinitetalk preset's chunk")
    parser.add_argument("--compile", action="store_true", help="compile the DiT's blocks (--compile); the warm-ups compile, each scenario reports compile_s")
    parser.add_argument("--compile-backend", default="inductor", help="torch.compile backend (aot_eager: a quick CPU dry run of --compile)")
    parser.add_argument("--sync-debug", choices=MODES, default="off", help="CUDA's sync debug mode in each render's steady state (a no-op on a CPU)")
    args = parser.parse_args(argv)
    progress, device = start_run(parser, args)
    plan = TINY_PLAN if args.tiny else REAL_PLAN
    if args.infinitetalk_steps is not None:
        plan = dataclasses.replace(plan, infinitetalk_steps=args.infinitetalk_steps)
    plan = dataclasses.replace(plan, guided=not args.no_guided, **_chosen(parser, args.residencies, args.sizes))
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / RESULT_FILE

    progress(f"building {'tiny' if args.tiny else 'real 14B'} networks on {device} in bf16")
    start = time.perf_counter()
    networks = build_networks(tiny_sizes() if args.tiny else real_sizes(), device, DTYPE)
    synchronize(device)
    build_s = time.perf_counter() - start
    family = InfiniteTalkFamily.from_networks(networks, f"random {'tiny' if args.tiny else 'real-size'} weights")
    counts = parameter_counts(networks)
    progress(f"built in {build_s:.1f} s: " + ", ".join(f"{k} {v / 1e9:.3f} B" for k, v in counts.items()))

    result: dict[str, Any] = {
        "benchmark": "infinitetalk-gpu",
        "environment": environment(device),
        "tiny": args.tiny,
        "dtype": str(DTYPE).removeprefix("torch."),
        "parameters": counts,
        "weight_bytes": sum(m.size_bytes for m in family.modules.values()),
        "build_s": round(build_s, 3),
        "budget_s": args.budget_s,
        "plan": dataclasses.asdict(plan),
        "not_run": NOT_RUN,
        "scenarios": {},
    }

    def save(scenarios: dict[str, Any]) -> None:
        write_json(path, {**result, "scenarios": scenarios, "total_s": round(progress.elapsed, 1)})

    save({})
    result["compiled"] = args.compile_backend if args.compile else None
    result["warm_ups"] = {}  # filled as they run: wall and compile seconds (compiling happens there)
    result["sync_debug"] = args.sync_debug
    result["scenarios"] = run_all(
        plan, family, device, args.budget_s, progress, save, args.compile_backend if args.compile else None, result["warm_ups"], args.sync_debug
    )
    result["total_s"] = round(progress.elapsed, 1)
    write_json(path, result)
    progress(f"wrote {path}")
    return result


def _chosen(parser: argparse.ArgumentParser, residencies: str | None, sizes: str | None) -> dict[str, Any]:
    """The plan's residencies and sizes as the command line narrows them; a bad name or size is the parser's error."""
    chosen: dict[str, Any] = {}
    if residencies:
        names = tuple(n.strip() for n in residencies.split(","))
        unknown = [n for n in names if n not in RESIDENCIES]
        if unknown:
            parser.error(f"--residencies: unknown {unknown}; choose of {', '.join(RESIDENCIES)}")
        chosen["residencies"] = names
    if sizes:
        try:
            chosen["sizes"] = tuple((int(w), int(h)) for w, h in (s.strip().split("x") for s in sizes.split(",")))
        except ValueError:
            parser.error(f"--sizes: {sizes!r} is not WxH[,WxH...] (e.g. 832x480)")
    return chosen


if __name__ == "__main__":
    main()
