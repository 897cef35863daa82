"""``bench --scenario parallel``: the speed-up model's predictions for 2, 4 and 8 GPUs next to measured --parallel runs.

1. one in-process run counts what the split DiT's blocks see per chunk (values, calls, batch = predictions per step);
2. ``render --nproc 1`` gives the per-stage times (the same command line as the measured runs, encoding included);
3. ``parallel_links`` times the all-to-all at each group size and the decode rank's point-to-point on this node;
4. the model (``parallel_model``) predicts every layout of 2, 4 and 8 processes;
5. ``render --nproc G --parallel L`` measures every layout that fits on this machine (its GPUs on CUDA, 4 processes on a CPU).
"""

from __future__ import annotations

import json
import subprocess
import sys
import wave
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from avatarstream.benchmarks.context import BenchContext
from avatarstream.benchmarks.parallel_model import ChunkWork, Link, layouts, table
from avatarstream.benchtools.audio import looped
from avatarstream.benchtools.measure import stage_named_for
from avatarstream.families.base import Family
from avatarstream.pipeline.pipeline import Pipeline
from avatarstream.runtime.launch import torchrun_command
from avatarstream.runtime.parallel.ulysses import SplitsSequence
from avatarstream.runtime.streamed import blocks_of

GPU_COUNTS = [2, 4, 8]
#: Links of one NVLink-4 node (H100/H200 HGX), used only where fewer than two devices can measure them; marked in the result.
ASSUMED_NVLINK = {"all_to_all": Link(300e9, 30e-6), "all_gather": Link(300e9, 20e-6), "point_to_point": Link(350e9, 15e-6)}
CPU_PROCESSES = 4
BENCH_ONLY = {"--scenario", "--seconds", "--minutes", "--repeats", "--out"}  # bench's own options, which render does not take
TIMEOUT_S = 1800


class BlockCounter:
    """Values and calls of the split DiT's blocks (their first input: [batch, tokens, dim])."""

    def __init__(self, network: nn.Module) -> None:
        self.values = self.calls = self.batch = self.value_bytes = self.forwards = self.output_values = 0
        blocks: list[nn.Module] = list(blocks_of(network) or [])
        self._hooks = [block.register_forward_pre_hook(self._count) for block in blocks]
        self._hooks.append(network.register_forward_hook(self._output))

    def _output(self, _module: nn.Module, _args: tuple[Any, ...], output: torch.Tensor) -> None:
        self.forwards += 1
        self.output_values += output.numel()

    def _count(self, _module: nn.Module, args: tuple[Any, ...]) -> None:
        x = args[0]
        self.values += x.numel()
        self.calls += 1
        self.batch = max(self.batch, x.shape[0])
        self.value_bytes = x.element_size()

    def close(self) -> None:
        for hook in self._hooks:
            hook.remove()


def _split_network(family: Family, pipeline: Pipeline) -> tuple[nn.Module, bool]:
    """The network the model declares split by sequence, and whether it declares its steps split too."""
    found = [part.network for part in pipeline.parallel_parts.get("sp", ()) if isinstance(part, SplitsSequence)]
    if not found:
        raise ValueError(f"the {family.name} family has no network that splits its sequence")
    return found[0], bool(pipeline.parallel_parts.get("steps"))


def _heads(network: nn.Module) -> int:
    """The attention heads of the network's first attention that has any."""
    return next(heads for m in network.modules() if isinstance(heads := getattr(m, "heads", getattr(m, "num_heads", None)), int))


@contextmanager
def _counting(network: nn.Module) -> Iterator[BlockCounter]:
    counter = BlockCounter(network)
    try:
        yield counter
    finally:
        counter.close()


def render_options(argv: list[str]) -> list[str]:
    """The bench command line's options that render takes too (model, weights, device, threads, generation)."""
    kept, skip = [], False
    for word in argv[1:] if argv and argv[0] == "bench" else argv:
        if skip:
            skip = False
        elif word.split("=")[0] in BENCH_ONLY:
            skip = "=" not in word
        else:
            kept.append(word)
    return kept


def _write_wav(path: Path, samples: np.ndarray, rate: int) -> None:
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())


def _render(options: list[str], audio: Path, out_dir: Path, name: str, nproc: int, layout: str | None) -> dict[str, Any]:
    report = out_dir / f"parallel-{name}.json"
    command = [sys.executable, "-m", "avatarstream.cli.main", "render", *options, "--audio", str(audio), "--out", str(out_dir / "parallel-tmp.mp4"),
               "--report", str(report), "--no-progress", "--nproc", str(nproc), *(["--parallel", layout] if layout else [])]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    (out_dir / "parallel-tmp.mp4").unlink(missing_ok=True)
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["no message"])[-1]}
    found: dict[str, Any] = json.loads(report.read_text())
    report.unlink()
    return found


def _links(processes: int, a2a_bytes: int, p2p_bytes: int, out_dir: Path) -> dict[str, Any]:
    path = out_dir / "parallel-links.json"
    command = torchrun_command(processes, [str(path), str(a2a_bytes), str(p2p_bytes)], module="avatarstream.benchmarks.parallel_links")
    subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S, check=True)
    raw: dict[str, Any] = json.loads(path.read_text())
    path.unlink()
    return raw


def _by_size(raw: dict[str, Any], name: str) -> dict[int, Link]:
    return {int(size): Link(**link) for size, link in raw.get(name, {}).items()}


def measure_parallel(ctx: BenchContext) -> dict[str, Any]:
    family, _ = ctx.family()
    pipeline = ctx.pipeline(family)
    network, split_steps = _split_network(family, pipeline)
    with _counting(network) as counter:
        shapes = ctx.run(family, encode=False)
    stages = pipeline.stages
    phases = {stage.name: stage.phase for stage in stages}
    generator = stage_named_for(stages, "generate")
    rate = 16000
    audio = ctx.out_dir / "parallel-speech.wav"
    _write_wav(audio, np.concatenate([b.samples[0] for b in looped(ctx.speech(rate), rate, ctx.seconds)]), rate)
    try:
        return _measure(ctx, family, network, split_steps, counter, shapes, phases, generator, audio)
    finally:
        audio.unlink(missing_ok=True)


def _measure(ctx: BenchContext, family: Family, network: nn.Module, split_steps: bool, counter: BlockCounter, shapes: dict[str, Any], phases: Mapping[str, str],
             generator: str, audio: Path) -> dict[str, Any]:  # fmt: skip
    chunks = max(len(shapes["chunks"]), 1)
    options = render_options(ctx.argv or ["--model", ctx.model])
    one = _render(options, audio, ctx.out_dir, "one", 1, None)
    if "error" in one:
        raise RuntimeError(f"the one-process render failed: {one['error']}")
    executed = max(one["num_chunks"], 1)
    seconds = {phase: sum(s for name, s in one["stage_seconds"].items() if phases.get(name) == phase) for phase in ("init", "chunk", "final")}
    width, height = one["resolution"]
    work = ChunkWork(
        init_s=seconds["init"],
        chunk_s=seconds["chunk"] / executed,
        dit_s=one["stage_seconds"].get(generator, 0.0) / executed,
        final_s=seconds["final"] / executed,
        frames_per_chunk=one["frames"] / executed,
        predictions=max(counter.batch, 1),
        block_values=counter.values / chunks,
        block_calls=counter.calls / chunks,
        forwards=counter.forwards / chunks,
        output_values=counter.output_values / chunks,
        value_bytes=counter.value_bytes,
        stretch_bytes=one["frames"] / executed * width * height * 3,
        heads=_heads(network),
        split_steps=int(one["settings"].get("steps", 0)) if split_steps else 0,
        latent_bytes=counter.output_values / max(counter.forwards, 1) * counter.value_bytes,  # one forward's output: a block's latents
    )
    available = torch.cuda.device_count() if ctx.device.type == "cuda" else CPU_PROCESSES
    message = int(work.block_values / max(work.block_calls, 1) * work.value_bytes / 2)  # one q/k/v all-to-all at sp=2
    raw_links = _links(available, message, int(work.stretch_bytes), ctx.out_dir) if available > 1 else {}
    counts = sorted({*GPU_COUNTS, *range(2, available + 1)})
    if raw_links:
        p2p = Link(**raw_links["point_to_point"])
        predicted = table(work, counts, _by_size(raw_links, "all_to_all"), p2p, _by_size(raw_links, "all_gather"))
    else:  # one device: nothing to measure between ranks, so the prediction rests on a node's published links
        assumed = ASSUMED_NVLINK
        predicted = table(work, counts, {2: assumed["all_to_all"]}, assumed["point_to_point"], {2: assumed["all_gather"]})
        raw_links = {"assumed": {name: link.__dict__ for name, link in assumed.items()}}
    measured = []
    for count in range(2, available + 1):
        for layout in layouts(count, work.heads, work.predictions, work.split_steps):
            run = _render(options, audio, ctx.out_dir, layout.text().replace(",", "-"), count, layout.text())
            row = {"layout": layout.text(), "gpus": count, **({"error": run["error"]} if "error" in run else _figures(run))}
            match = next((p for p in predicted if p["layout"] == layout.text() and p["gpus"] == count), None)
            if match is not None and "fps" in row:
                row |= {"predicted_fps": match["fps"], "predicted_ttff_s": match["ttff_s"], "fps_error_pct": round(100 * (match["fps"] / row["fps"] - 1), 1)}
            measured.append(row)
    return {
        "one_process": _figures(one),
        "work_per_chunk": work.__dict__,
        "links": raw_links,
        "predicted": predicted,
        "measured": measured,
        "processes_here": available,
    }


def _figures(report: dict[str, Any]) -> dict[str, Any]:
    return {"fps": round(report["fps_out"], 3), "ttff_s": round(report["ttff_s"], 4), "realtime_factor": round(report["realtime_factor"], 3)}
