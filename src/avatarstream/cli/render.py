"""``avatarstream render``: audio (+ reference, prompt) in, an MP4 with H.264 and AAC out.

A thin shell over ``avatarstream.render`` (api.py): parse, relaunch under
torchrun for ``--nproc``, call, print the figures, hold the preview.
"""

from __future__ import annotations

import argparse
import threading
from pathlib import Path

from avatarstream.cli.encoder_args import add_x264_preset_argument
from avatarstream.cli.help_format import DefaultsHelpFormatter
from avatarstream.cli.model_args import add_model_arguments, model_options, upscale_request
from avatarstream.cli.runtime_args import add_compile_argument, add_parallel_argument, add_runtime_arguments
from avatarstream.publish.options import add_output_arguments, outputs_from_args
from avatarstream.render_inputs import check_render_inputs
from avatarstream.runtime.names import POLICY_NAMES


def add_parser(commands: argparse._SubParsersAction, model: str | None, upscaler: str | None = None) -> None:
    p = commands.add_parser(
        "render",
        help="render a talking-avatar MP4 from an audio file",
        description=(
            "Render a talking-avatar video chunk by chunk. Frames are encoded while generation runs; "
            "memory stays constant however long the audio is. With no arguments the bundled avatar "
            "and speech sample are used."
        ),
        epilog="example: avatarstream render --audio speech.wav --reference face.png --out talk.mp4 --report report.json",
        formatter_class=DefaultsHelpFormatter,
    )
    p.add_argument("--audio", type=Path, help="driving audio: WAV, MP3, FLAC or OGG, any rate, mono or stereo (default: bundled speech)")
    p.add_argument("--reference", type=Path, help="reference image, PNG or JPEG of any size; centre-cropped (default: the bundled avatar)")
    p.add_argument("--prompt", default="", help="text / scene conditioning")
    p.add_argument("--out", type=Path, default=Path("out/avatar.mp4"), help="output MP4 (H.264 + AAC); '-' for none when other outputs are given")
    p.add_argument("--report", type=Path, help="write a JSON report: time to first frame, fps, real-time factor, per-stage and per-chunk figures, memory")
    p.add_argument("--trace", type=Path, help="write a Chrome trace-event JSON (open in Perfetto) with one span per stage per chunk")
    p.add_argument("--seed", type=int, default=0, help="noise seed; the same seed gives the same video (bit for bit with --deterministic)")
    p.add_argument(
        "--deterministic",
        action="store_true",
        help="hold torch's CPU thread count whatever other programs do, so the same seed gives bit-identical frames "
        "(by default the count follows the machine's load, which can change the last bits of some frames; slower next to a busy program)",
    )
    add_x264_preset_argument(p)
    add_runtime_arguments(p)
    add_compile_argument(p)
    p.add_argument(
        "--overlap",
        action=argparse.BooleanOptionalAction,
        help="finish chunk k (SR, decode) while chunk k+1 generates (default: on with CUDA; off on CPU, where the threads compete for the same cores)",
    )
    p.add_argument(
        "--residency",
        default="",
        help=f"where each module's weights live: module=policy[:option],... with policies {', '.join(POLICY_NAMES)} "
        "(e.g. a2v_dit=streamed:2,sr_dit=offloaded,default=resident; sharded needs --nproc)",
    )
    p.add_argument("--nproc", type=int, default=1, help="processes (one per GPU) under torchrun; rank 0 writes the outputs")
    add_parallel_argument(p)
    add_model_arguments(p, model, upscaler)
    add_output_arguments(p)
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    options, upscale = model_options(args), upscale_request(args)  # checked before torchrun starts more processes
    outputs = outputs_from_args(args)
    # bad input, a weights folder too, is told at once, before torch loads (avatarstream.render checks the same again)
    check_render_inputs(
        args.audio, args.reference, outputs, args.report, args.trace, seed=args.seed, model=args.model, weights=args.weights, model_options=options,
        upscale=upscale,
    )  # fmt: skip
    from avatarstream.api import render
    from avatarstream.runtime.launch import relaunch

    relaunch(args.nproc, args.argv, args.parallel)  # returns in a torchrun worker or when --nproc is 1
    result = render(
        args.audio, args.reference, out=outputs, prompt=args.prompt, model=args.model, weights=args.weights, model_options=options, upscale=upscale.name,
        upscale_weights=upscale.weights, upscale_options=upscale.options, device=args.device, residency=args.residency, parallel=args.parallel,
        overlap=args.overlap, compile=args.compile, threads=args.threads, deterministic=args.deterministic, seed=args.seed, preset=args.x264_preset, report=args.report, trace=args.trace,
        progress=not args.no_progress,
    )  # fmt: skip
    summary = result.report
    if not summary:  # a rank that does not publish
        return 0
    wrote = [
        f"{what}{path}"
        for what, path in (("", outputs.file), ("HLS ", outputs.hls), ("frames ", outputs.frames), ("report ", args.report), ("trace ", args.trace))
        if path
    ]
    failed = [r.name for r in result.failed]
    status = f"failed: {', '.join(failed)} incomplete (above)" if failed else "done"
    print(
        f"{status}{' -> ' + ', '.join(wrote) if wrote else ''}: {summary['frames']} frames ({summary['duration_s']:.2f} s) | "
        f"time to first frame {summary['ttff_s']:.3f} s | real-time factor {summary['realtime_factor']:.2f}x | "
        f"{summary['fps_out']:.1f} fps | model load {summary['load_s']:.2f} s | peak RSS {summary['peak_rss_bytes'] / 2**20:.0f} MiB",
        flush=True,
    )
    if result.preview is not None:
        print(f"preview: the render is done; still serving the finished stream at {result.preview.url} until Ctrl-C", flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
        finally:
            result.preview.stop()
    return 1 if failed else 0
