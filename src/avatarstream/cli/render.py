"""``avatarstream render``: audio (+ reference, prompt) in, an MP4 with H.264 and AAC out."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import torch
from tqdm import tqdm

from avatarstream.cli.help_format import DefaultsHelpFormatter
from avatarstream.errors import InputError
from avatarstream.cli.model_args import add_model_arguments, generation_options, load_model
from avatarstream.pipeline.report import ReportRecorder
from avatarstream.pipeline.trace import TraceWriter
from avatarstream.publish import EncoderSettings
from avatarstream.publish.options import add_output_arguments, open_publisher
from avatarstream.runtime.devices import DEVICE_CHOICES, resolve_device
from avatarstream.runtime.launch import RankInfo, finish, init_rank, relaunch
from avatarstream.runtime.policies import POLICIES, parse_residency
from avatarstream.sources.audio_file import open_audio_file
from avatarstream.sources.reference_choice import ASSETS



def add_parser(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "render",
        help="render a talking-avatar MP4 from an audio file",
        description=(
            "Render a talking-avatar video chunk by chunk. Frames are encoded while generation runs; "
            "memory stays constant however long the audio is. With no arguments the bundled reference "
            "and speech sample are used."
        ),
        epilog="example: avatarstream render --audio speech.wav --reference face.png --out talk.mp4 --report report.json",
        formatter_class=DefaultsHelpFormatter,
    )
    p.add_argument("--audio", type=Path, help="driving audio: WAV, MP3, FLAC or OGG, any rate, mono or stereo (default: bundled speech)")
    p.add_argument("--reference", type=Path, help="reference image, PNG or JPEG of any size; centre-cropped (default: bundled avatar)")
    p.add_argument("--avatar", type=int, metavar="SEED", help="use the procedural identity SEED as the reference (what the demo weights were trained on)")
    p.add_argument("--threads", type=int, help="torch CPU threads (default: one per core; 1 is faster when other jobs share the cores)")
    p.add_argument("--prompt", default="", help="text / scene conditioning")
    p.add_argument("--out", type=Path, default=Path("out/avatar.mp4"), help="output MP4 (H.264 + AAC); '-' for none when other outputs are given")
    p.add_argument("--report", type=Path, help="write a JSON report: time to first frame, fps, real-time factor, per-stage and per-chunk figures, memory")
    p.add_argument("--trace", type=Path, help="write a Chrome trace-event JSON (open in Perfetto) with one span per stage per chunk")
    p.add_argument("--device", default="auto", help=f"where to run: {', '.join(DEVICE_CHOICES)} or cuda:N")
    p.add_argument("--seed", type=int, default=0, help="noise seed; the same seed gives the same video")
    p.add_argument("--preset", default="veryfast", help="x264 speed preset")
    p.add_argument(
        "--overlap",
        action=argparse.BooleanOptionalAction,
        help="finish chunk k (SR, decode) while chunk k+1 generates (default: on with CUDA; off on CPU, where the threads compete for the same cores)",
    )
    p.add_argument(
        "--residency",
        default="",
        help=f"where each module's weights live: module=policy[:option],... with policies {', '.join(POLICIES)} "
        "(e.g. a2v_dit=streamed:2,sr_dit=offloaded,default=resident; sharded needs --nproc)",
    )
    p.add_argument("--nproc", type=int, default=1, help="processes (one per GPU) under torchrun; rank 0 writes the outputs")
    add_model_arguments(p)
    add_output_arguments(p)
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.seed < 0:
        raise InputError(f"--seed must be 0 or more, got {args.seed}")
    relaunch(args.nproc, args.argv)  # returns in a torchrun worker or when --nproc is 1
    rank, device = init_rank(resolve_device(args.device))
    try:
        return _render(args, rank, device)
    finally:
        finish(rank)


def _render(args: argparse.Namespace, rank: RankInfo, device: torch.device) -> int:
    if args.threads is not None:
        if args.threads < 1:
            raise InputError(f"--threads must be at least 1, got {args.threads}")
        torch.set_num_threads(args.threads)
    audio_path = args.audio or ASSETS / "speech.flac"
    audio = open_audio_file(audio_path)

    load_start = time.perf_counter()
    family = load_model(args, device)
    residency = parse_residency(args.residency, family.modules)
    options = generation_options(args)
    overlap = device.type == "cuda" if args.overlap is None else args.overlap
    pipeline = family.build(device, options, residency=residency, overlap=overlap, read_ahead=True)
    pipeline.prepare()
    load_s = time.perf_counter() - load_start

    width, height = family.frame_size
    reference = family.reference(args.reference, args.avatar)
    if not rank.publishes:  # every rank computes (sharded modules need all of them); only rank 0 writes
        with audio:
            for _ in pipeline.stream(audio, reference, args.prompt, seed=args.seed):
                pass
        return 0
    try:
        settings = EncoderSettings(width=width, height=height, fps=family.fps, preset=args.preset)
    except ValueError as exc:
        raise InputError(str(exc)) from exc
    runtime = pipeline.runtime
    recorder = ReportRecorder(
        runtime.peak_device_bytes,
        extra={
            "model": args.model,
            "weights": family.weights,
            "device": str(device),
            "resolution": [width, height],
            "fps": family.fps,
            "settings": family.settings,
            "load_s": round(load_s, 4),
            "processes": rank.world_size,
            "numa": dataclasses.asdict(rank.binding) if rank.binding else None,
        },
        late_fields={"stage_switches": runtime.switch_summary, "runtime": runtime.summary},
        chunk_fields=runtime.take_chunk_stats,
    )
    observers = [recorder]
    trace = TraceWriter(args.trace) if args.trace else None
    if trace is not None:
        observers.append(trace)
    if str(args.out) == "-":
        args.out = None
    publisher = open_publisher(args, settings)
    estimate = audio.duration_s * family.fps if audio.duration_s else None
    try:
        with publisher, tqdm(total=round(estimate) if estimate else None, unit="frame", disable=args.no_progress, desc="render") as bar:
            for media in pipeline.stream(audio, reference, args.prompt, seed=args.seed, observers=observers):
                publisher.submit(media)
                bar.update(media.num_frames)
    finally:
        audio.close()
        if trace is not None:
            trace.close()
        recorder.extra["outputs"] = [dataclasses.asdict(r) for r in publisher.reports]
        summary = recorder.write(args.report) if args.report else recorder.summary()
        recorder.close()
        for report in publisher.reports:
            if not report.complete:
                print(f"warning: output {report.name} did not deliver everything: {report.packets_dropped} packets dropped; {'; '.join(report.errors[-3:])}", file=sys.stderr)
    print(
        f"done{f' -> {args.out}' if args.out else ''}: {summary['frames']} frames ({summary['duration_s']:.2f} s) | "
        f"time to first frame {summary['ttff_s']:.3f} s | real-time factor {summary['realtime_factor']:.2f}x | "
        f"{summary['fps_out']:.1f} fps | model load {load_s:.2f} s | peak RSS {summary['peak_rss_bytes'] / 2**20:.0f} MiB"
    )
    return 0
