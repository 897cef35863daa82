"""LiveAvatar at its real size (Wan2.2-S2V-14B + LoRA merged, umT5-XXL, wav2vec2-large, Wan VAE) on one GPU.

Random bf16 weights are built straight on the device (speed does not depend
on their values), as the InfiniteTalk benchmark does. Scenarios, each a render
of looped bundled speech at 704x384 through the family's own pipeline: all
weights resident, then umT5 offloaded. Reported per scenario: time to first
frame, fps, real-time factor, the steady block time, per-stage time, peak
device memory and the KV-cache bytes the session holds. One process only:
the step-per-rank layout (``--parallel steps=4``) is not implemented. The JSON
is rewritten after every scenario; none starts after the budget.

    python -m avatarstream.benchmarks.liveavatar_gpu --out bench/results/DIR            # a CUDA GPU, ~4 min
    python -m avatarstream.benchmarks.liveavatar_gpu --out /tmp/x --tiny --device cpu   # tiny networks, seconds
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from dataclasses import dataclass
from typing import Any

import torch
from transformers import UMT5EncoderModel, Wav2Vec2Config, Wav2Vec2FeatureExtractor, Wav2Vec2Model

from avatarstream.benchmarks.audio import bundled_speech, looped
from avatarstream.benchmarks.infinitetalk_gpu import (
    GIB,
    back_on_device,
    environment,
    is_out_of_memory,
    materialize,
    reset_device_peak,
    run_parser,
    start_run,
    write_json,
)
from avatarstream.benchmarks.measure import measure
from avatarstream.families.infinitetalk.tiny_encoders import T5_BUCKETS, T5_FFN, T5_HEADS, T5_LAYERS, umt5_tokenizer
from avatarstream.families.liveavatar.family import LiveAvatarFamily
from avatarstream.families.liveavatar.load_audio import AudioEncoder
from avatarstream.families.liveavatar.memory import WAV2VEC2_LARGE, kv_bytes
from avatarstream.families.liveavatar.networks import LiveAvatarNetworks
from avatarstream.families.liveavatar.tiny import TINY, TINY_WAV2VEC2
from avatarstream.models.infinitetalk.config import VAEConfig
from avatarstream.models.infinitetalk.text_encoder import TextEncoder, umt5_config
from avatarstream.models.infinitetalk.vae import build_vae
from avatarstream.models.liveavatar.audio_features import SAMPLE_RATE
from avatarstream.models.liveavatar.config import S2VConfig
from avatarstream.models.liveavatar.dit import FP32_PARAMETERS, S2VDiT
from avatarstream.runtime.devices import synchronize
from avatarstream.weights.meta_load import empty_weights

DTYPE = torch.bfloat16
RESULT_FILE = "liveavatar-gpu.json"
NOT_RUN = {"steps=4 layout": "the step-per-rank --parallel layout is not implemented yet"}
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
    materialize(dit, device, dtype, generator, lambda key: any(p in key for p in FP32_PARAMETERS))
    for network in (vae, audio, text):
        materialize(network, device, dtype, generator)
    return LiveAvatarNetworks(dit, vae, AudioEncoder(Wav2Vec2FeatureExtractor(do_normalize=True), audio), TextEncoder(text, tokenizer))


def run_scenario(family: LiveAvatarFamily, plan: Plan, residency: str, device: torch.device) -> dict[str, Any]:
    width, height = plan.size
    options = {"size": [width, height]}
    describe = {"size": [width, height], "residency": RESIDENCIES[residency], "audio_s": plan.seconds}
    pipeline = None
    try:
        pipeline = family.build(device, options, residency=RESIDENCIES[residency], overlap=True, read_ahead=True)
        pipeline.prepare()
        synchronize(device)
        reset_device_peak(device)
        report = measure(pipeline, family.reference(None), looped(bundled_speech(SAMPLE_RATE), SAMPLE_RATE, plan.seconds))
    except RuntimeError as exc:
        if not is_out_of_memory(exc):
            raise
        return {**describe, "status": "skipped", "reason": f"out of memory: {str(exc).splitlines()[0]}"}
    finally:
        if pipeline is not None:
            pipeline.runtime.close()
        del pipeline
        back_on_device(family, device)  # type: ignore[arg-type]  # any family with modules
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
        "peak_device_gib": round(peak / GIB, 2) if peak is not None else None,
        "kv_cache_bytes": {"step_caches": steps, "sink": sink},
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = run_parser(__doc__.split("\n\n")[0], RESULT_FILE, 330.0, "start no scenario after this many seconds")
    args = parser.parse_args(argv)
    progress, device = start_run(parser, args)
    plan = TINY_PLAN if args.tiny else REAL_PLAN
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / RESULT_FILE
    dtype = DTYPE if device.type == "cuda" else torch.float32  # a CPU dry run: bf16 convolutions are slow there and measure nothing
    progress(f"building {'tiny' if args.tiny else 'real 14B'} networks on {device} in {dtype}")
    start = time.perf_counter()
    networks = build_networks(args.tiny, device, dtype)
    synchronize(device)
    family = LiveAvatarFamily.from_networks(networks, f"random {'tiny' if args.tiny else 'real-size'} weights")
    result: dict[str, Any] = {
        "benchmark": "liveavatar-gpu",
        "environment": environment(device),
        "tiny": args.tiny,
        "dtype": str(dtype).removeprefix("torch."),
        "weight_bytes": sum(m.size_bytes for m in family.modules.values()),
        "build_s": round(time.perf_counter() - start, 3),
        "plan": dataclasses.asdict(plan),
        "not_run": NOT_RUN,
        "scenarios": {},
    }
    progress(f"built in {result['build_s']:.1f} s, {result['weight_bytes'] / GIB:.1f} GiB of weights")
    for residency in plan.scenarios():
        if progress.elapsed > args.budget_s:
            result["scenarios"][residency] = {"status": "skipped", "reason": f"time budget of {args.budget_s:g} s spent"}
            continue
        progress(f"running: {residency} at {plan.size[0]}x{plan.size[1]}")
        record = result["scenarios"][residency] = run_scenario(family, plan, residency, device)
        if record["status"] == "ok":
            progress(
                f"  -> ttff {record['ttff_s']:.2f} s, {record['fps_out']:.2f} fps, steady {record['steady_fps']:.1f} fps, peak {record['peak_device_gib']} GiB"
            )
        else:
            progress(f"  -> skipped: {record['reason']}")
        write_json(path, {**result, "total_s": round(progress.elapsed, 1)})
    result["total_s"] = round(progress.elapsed, 1)
    write_json(path, result)
    progress(f"wrote {path}")
    return result


if __name__ == "__main__":
    main()
