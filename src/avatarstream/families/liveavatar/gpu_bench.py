"""LiveAvatar at its real size (Wan2.2-S2V-14B + LoRA merged, umT5-XXL, wav2vec2-large, Wan VAE) on one GPU.

Random bf16 weights are built straight on the device (speed does not depend
on their values), as the InfiniteTalk benchmark does. Scenarios, each a render
of looped bundled speech at 704x384 through the family's own pipeline: all
weights resident, then umT5 offloaded. Reported per scenario: time to first
frame, fps, real-time factor, the steady block time, per-stage time, peak
device memory and the KV-cache bytes the session holds. Under torchrun with
``--parallel LAYOUT`` (``layout_for`` picks the widest the GPUs allow: a rank
per denoising step, plus a decode rank, plus sp=2 inside each step) every rank
builds the networks on its GPU and rank 0 measures one scenario, all weights
resident. The JSON is rewritten after every scenario; none starts after the budget.
``--sync-debug warn`` counts, by line, what made the host wait in each render's
steady state (``steady_host_waits``); ``error`` stops at the first.

    python -m avatarstream.families.liveavatar.gpu_bench --out bench/results/DIR            # a CUDA GPU, ~4 min
    torchrun --standalone --nproc-per-node 4 -m avatarstream.families.liveavatar.gpu_bench --out DIR --parallel steps=4
    python -m avatarstream.families.liveavatar.gpu_bench --out /tmp/x --tiny --device cpu   # tiny networks, seconds
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time
from dataclasses import dataclass
from typing import Any

import torch
from transformers import UMT5EncoderModel, Wav2Vec2Config, Wav2Vec2FeatureExtractor, Wav2Vec2Model

from avatarstream.benchtools import gpu_run
from avatarstream.benchtools.audio import bundled_speech, looped
from avatarstream.benchtools.measure import measure
from avatarstream.components.wan.config import VAEConfig
from avatarstream.components.wan.text_encoder import TextEncoder, umt5_config
from avatarstream.components.wan.tiny_text_encoder import T5_BUCKETS, T5_FFN, T5_HEADS, T5_LAYERS, umt5_tokenizer
from avatarstream.components.wan.vae import build_vae
from avatarstream.families.assemble import build_pipeline
from avatarstream.families.liveavatar.family import LiveAvatarFamily
from avatarstream.families.liveavatar.load_audio import AudioEncoder
from avatarstream.families.liveavatar.memory import WAV2VEC2_LARGE, kv_bytes
from avatarstream.families.liveavatar.networks import LiveAvatarNetworks
from avatarstream.families.liveavatar.presets import PRESETS
from avatarstream.families.liveavatar.tiny import TINY, TINY_WAV2VEC2
from avatarstream.models.liveavatar.audio_features import SAMPLE_RATE
from avatarstream.models.liveavatar.config import S2VConfig
from avatarstream.models.liveavatar.dit import FP32_PARAMETERS, S2VDiT
from avatarstream.pipeline.pipeline import Pipeline
from avatarstream.runtime.devices import synchronize
from avatarstream.runtime.launch import RankInfo, finish, init_rank
from avatarstream.runtime.parallel.groups import ParallelGroups
from avatarstream.runtime.sync_debug import MODES, steady_sync_debug
from avatarstream.weights.meta_load import empty_weights

DTYPE = torch.bfloat16
RESULT_FILE = "liveavatar-gpu.json"
STEPS = PRESETS["liveavatar"].steps  # the distilled sampler's steps: --parallel steps=N runs one per rank
RESIDENCIES = {"resident": {"default": "resident"}, "text-encoder-offloaded": {"text_encoder": "offloaded", "default": "resident"}}


@dataclass(frozen=True)
class Plan:
    size: tuple[int, int]
    seconds: float
    tiny: bool

    def scenarios(self) -> list[str]:
        return list(RESIDENCIES)


REAL_PLAN = Plan((704, 384), 6.0, tiny=False)
TINY_PLAN = Plan((64, 64), 1.5, tiny=True)


def build_networks(tiny: bool, device: torch.device, dtype: torch.dtype, seed: int = 0) -> LiveAvatarNetworks:
    """The four networks with random weights on ``device``."""
    config = TINY if tiny else S2VConfig.real()
    audio_sizes = dict(TINY_WAV2VEC2, hidden_size=config.audio_dim, num_hidden_layers=config.audio_layers - 1) if tiny else WAV2VEC2_LARGE
    tokenizer = umt5_tokenizer()
    vocab = -(-len(tokenizer) // 128) * 128
    tiny_t5 = {"vocab_size": vocab, "d_model": config.text_dim, "num_layers": T5_LAYERS, "num_heads": T5_HEADS, "d_kv": config.text_dim // T5_HEADS}
    t5 = umt5_config(**tiny_t5, d_ff=T5_FFN, num_buckets=T5_BUCKETS) if tiny else umt5_config()
    with empty_weights():
        dit = S2VDiT(config)
        vae = build_vae(VAEConfig(base_dim=4) if tiny else VAEConfig())
        audio = Wav2Vec2Model(Wav2Vec2Config(**audio_sizes))
        text = UMT5EncoderModel(t5)
    text.encoder.embed_tokens.weight = text.shared.weight
    generator = torch.Generator(device).manual_seed(seed)
    gpu_run.materialize(dit, device, dtype, generator, lambda key: any(p in key for p in FP32_PARAMETERS))
    for network in (vae, audio, text):
        gpu_run.materialize(network, device, dtype, generator)
    return LiveAvatarNetworks(dit, vae, AudioEncoder(Wav2Vec2FeatureExtractor(do_normalize=True), audio), TextEncoder(text, tokenizer))


def layout_for(gpus: int) -> tuple[str, int] | None:
    """The widest ``--parallel`` layout ``gpus`` allow, and its processes: a rank per step (+ a decode rank), then sp=2 inside
    each step; below one rank per step, sp=2 alone; None for one GPU."""
    if gpus >= 2 * STEPS:
        return f"steps={STEPS},sp=2", 2 * STEPS
    if gpus > STEPS:
        return f"steps={STEPS},decode", STEPS + 1
    if gpus == STEPS:
        return f"steps={STEPS}", STEPS
    return ("sp=2", 2) if gpus >= 2 else None


def _build(family: LiveAvatarFamily, plan: Plan, residency: str, device: torch.device, parallel: ParallelGroups) -> Pipeline:
    pipeline = build_pipeline(family, device, {"size": list(plan.size)}, residency=RESIDENCIES[residency], overlap=True, read_ahead=True, parallel=parallel)
    pipeline.prepare()
    return pipeline


def follow_scenario(family: LiveAvatarFamily, plan: Plan, device: torch.device, parallel: ParallelGroups) -> None:
    """A rank after 0 of a ``--parallel`` run: its part of rank 0's render."""
    pipeline = _build(family, plan, "resident", device, parallel)
    try:
        pipeline.follow()
    finally:
        pipeline.runtime.close()


def run_scenario(
    family: LiveAvatarFamily, plan: Plan, residency: str, device: torch.device, parallel: ParallelGroups, sync_debug: str = "off"
) -> dict[str, Any]:
    width, height = plan.size
    layout = parallel.layout.text() if parallel.distributed else None
    describe = {"size": [width, height], "residency": RESIDENCIES[residency], "audio_s": plan.seconds, "parallel": layout}
    pipeline = None
    try:
        pipeline = _build(family, plan, residency, device, parallel)
        synchronize(device)
        gpu_run.reset_device_peak(device)
        with steady_sync_debug(device, sync_debug) as waits:
            report = measure(pipeline, family.reference(None, {"size": [width, height]}), looped(bundled_speech(SAMPLE_RATE), SAMPLE_RATE, plan.seconds))
    except RuntimeError as exc:
        if not gpu_run.is_out_of_memory(exc):
            raise
        return {**describe, "status": "skipped", "reason": f"out of memory: {str(exc).splitlines()[0]}"}
    finally:
        if pipeline is not None:
            pipeline.runtime.close()
        del pipeline
        gpu_run.back_on_device((module.network for module in family.modules.values()), device)
    block_s = [c["wall_s"] for c in report["chunks"]]
    steps, sink = kv_bytes(family.networks.dit.config, plan.size, family.networks.dit.dtype.itemsize)
    peak = report["peak_device_bytes"]
    return {
        **describe,
        "status": "ok",
        **{k: report[k] for k in ("ttff_s", "fps_out", "realtime_factor", "wall_s", "frames", "num_chunks", "stage_seconds", "peak_rss_bytes")},
        "block_s": block_s,
        "steady_block_s": statistics.median(block_s[2:] or block_s),  # after the first block and the sink refresh's neighbourhood
        "steady_fps": 12 / statistics.median(block_s[2:] or block_s),
        "peak_device_bytes": peak,
        "peak_device_gib": round(peak / gpu_run.GIB, 2) if peak is not None else None,
        "kv_cache_bytes": {"step_caches": steps, "sink": sink},
        **({"steady_host_waits": dict(waits)} if sync_debug == "warn" else {}),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = gpu_run.run_parser(__doc__.split("\n\n")[0], RESULT_FILE, 330.0, "start no scenario after this many seconds")
    parser.add_argument("--parallel", metavar="LAYOUT", help="under torchrun: the --parallel layout of one all-resident scenario (e.g. steps=4,decode)")
    parser.add_argument("--sync-debug", choices=MODES, default="off", help="CUDA's sync debug mode in each render's steady state (a no-op on a CPU)")
    args = parser.parse_args(argv)
    progress, device = gpu_run.start_run(parser, args)
    info, device = init_rank(device, args.parallel)
    try:
        return _run(args, progress, device, info)
    finally:
        finish(info)


def _run(args: argparse.Namespace, progress: gpu_run.Progress, device: torch.device, info: RankInfo) -> dict[str, Any]:
    plan = TINY_PLAN if args.tiny else REAL_PLAN
    scenarios = ["resident"] if info.distributed else plan.scenarios()
    path = args.out / RESULT_FILE
    dtype = DTYPE if device.type == "cuda" else torch.float32  # a CPU dry run: bf16 convolutions are slow there and measure nothing
    progress(f"building {'tiny' if args.tiny else 'real 14B'} networks on {device} in {dtype}")
    start = time.perf_counter()
    networks = build_networks(args.tiny, device, dtype)
    synchronize(device)
    family = LiveAvatarFamily.from_networks(networks, f"random {'tiny' if args.tiny else 'real-size'} weights")
    if not info.publishes:
        follow_scenario(family, plan, device, info.groups)
        return {}
    args.out.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {
        "benchmark": "liveavatar-gpu",
        "environment": gpu_run.environment(device),
        "tiny": args.tiny,
        "dtype": str(dtype).removeprefix("torch."),
        "weight_bytes": sum(m.size_bytes for m in family.modules.values()),
        "build_s": round(time.perf_counter() - start, 3),
        "plan": dataclasses.asdict(plan),
        "processes": info.world_size,
        "sync_debug": args.sync_debug,
        "scenarios": {},
    }
    progress(f"built in {result['build_s']:.1f} s, {result['weight_bytes'] / gpu_run.GIB:.1f} GiB of weights")
    for residency in scenarios:
        if progress.elapsed > args.budget_s:
            result["scenarios"][residency] = {"status": "skipped", "reason": f"time budget of {args.budget_s:g} s spent"}
            continue
        progress(f"running: {residency} at {plan.size[0]}x{plan.size[1]}")
        record = result["scenarios"][residency] = run_scenario(family, plan, residency, device, info.groups, args.sync_debug)
        if record["status"] == "ok":
            progress(
                f"  -> ttff {record['ttff_s']:.2f} s, {record['fps_out']:.2f} fps, steady {record['steady_fps']:.1f} fps, peak {record['peak_device_gib']} GiB"
            )
        else:
            progress(f"  -> skipped: {record['reason']}")
        gpu_run.write_json(path, {**result, "total_s": round(progress.elapsed, 1)})
    result["total_s"] = round(progress.elapsed, 1)
    gpu_run.write_json(path, result)
    progress(f"wrote {path}")
    return result


if __name__ == "__main__":
    main()
