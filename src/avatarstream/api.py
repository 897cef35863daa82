"""``avatarstream.render``: the one-call Python API behind ``avatarstream render``.

Audio and a reference in; MP4 / HLS / RTMP / Kinesis / preview out, with the
report the CLI writes. The CLI only parses its options into these arguments.
Under ``torchrun`` every rank calls it and only rank 0 writes outputs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from tqdm import tqdm

from avatarstream import stop_requests
from avatarstream.errors import InputError
from avatarstream.families.assemble import build_pipeline
from avatarstream.families.base import Family, model_warnings
from avatarstream.families.options import FamilyOptions
from avatarstream.families.registry import DEFAULT_MODEL, NO_UPSCALE, Upscale, load_family, options_class
from avatarstream.input_warnings import Warnings, audio_rate_warning, collecting, warn_on_audio_rate
from avatarstream.output_paths import removed_on_failure
from avatarstream.pipeline.report import ReportRecorder
from avatarstream.pipeline.trace import TraceWriter
from avatarstream.publish import EncoderSettings
from avatarstream.publish.outputs import Outputs
from avatarstream.publish.sink import Sink, SinkReport
from avatarstream.render_inputs import check_render_inputs
from avatarstream.runtime.cpu_threads import cpu_report, set_threads
from avatarstream.runtime.devices import resolve_device
from avatarstream.runtime.launch import RankInfo, finish, init_rank
from avatarstream.runtime.parallel.guard import stops_every_rank
from avatarstream.runtime.policies import parse_residency
from avatarstream.sources.audio_file import AudioFileSource, open_audio_file
from avatarstream.sources.bundled import DEFAULT_SPEECH
from avatarstream.sources.pcm import PcmBlock

if TYPE_CHECKING:
    from avatarstream.publish.preview import PreviewServer  # aiortc is loaded only for a preview

PathLike = str | os.PathLike[str]


@dataclass
class RenderResult:
    """What a render measured (the JSON report's fields), one report per output, and a preview still serving, if kept."""

    report: dict[str, Any]
    outputs: list[SinkReport]
    preview: PreviewServer | None = None

    @property
    def complete(self) -> bool:
        """Every output received everything."""
        return all(r.complete for r in self.outputs)

    @property
    def failed(self) -> list[SinkReport]:
        """The file outputs that did not get everything (a full disk, say): what they hold is not the whole video."""
        return [r for r in self.outputs if r.failed]


def render(
    audio: PathLike | Iterable[PcmBlock] | None = None,
    reference: PathLike | None = None,
    *,
    out: PathLike | Outputs | None = "out/avatar.mp4",
    frames: PathLike | None = None,
    prompt: str = "",
    model: str | Family = DEFAULT_MODEL,
    weights: PathLike | None = None,
    model_options: FamilyOptions | Mapping[str, Any] | None = None,
    upscale: str | None = None,
    upscale_weights: PathLike | None = None,
    upscale_options: FamilyOptions | Mapping[str, Any] | None = None,
    device: str | torch.device = "auto",
    residency: str = "",
    parallel: str | None = None,
    overlap: bool | None = None,
    compile: bool = False,
    threads: int | None = None,
    deterministic: bool = False,
    seed: int = 0,
    preset: str = "veryfast",
    report: PathLike | None = None,
    trace: PathLike | None = None,
    progress: bool = False,
) -> RenderResult:
    """Render a talking-avatar video chunk by chunk; frames are encoded while generation runs.

    ``audio``: a WAV/MP3/FLAC/OGG file, or any iterable of ``PcmBlock`` (a live
    source); None: the bundled speech. ``reference``: a PNG/JPEG; None: the
    model's default avatar. ``out``: an MP4 path or an ``Outputs`` with any
    combination of outputs. ``frames``: also every frame as a lossless PNG in this new or empty folder
    (``000000.png``, ...; the same as ``Outputs(frames=...)``). ``model``: a registered family's name
    (``avatarstream families`` lists them) with ``weights``, its folder as
    downloaded, or a family already loaded with ``load_family``, to render many
    times without reloading. ``model_options``: the family's own options, a
    mapping or its ``Options`` dataclass (unset ones take the model's defaults;
    ``render --model NAME --help`` lists them).
    ``upscale``: an upscaler's name (``avatarstream families`` lists them) that lifts every frame to a larger size after
    the model, with ``upscale_weights``, its folder as downloaded, and ``upscale_options``, its own options.
    ``residency``: where each module's weights live, as ``--residency``.
    ``parallel``: how the processes of a torchrun launch split the session, as ``--parallel``.
    ``overlap``: finish chunk k while chunk k+1 generates (default: on with CUDA).
    ``threads``: torch CPU threads (default: one per core while the machine is quiet, fewer while other programs
    compete). ``deterministic``: hold the thread count whatever the load, so the same seed gives bit-identical frames
    on a CPU (by default a count that follows the load can change the last bits of some frames). ``report`` /
    ``trace``: write the JSON report / a Chrome trace. Warnings about the inputs (random weights, a reference the
    weights cannot animate, audio below the model's rate) are printed once each on stderr (``warning: ...``) and
    listed in the report's ``warnings``. Raises ``InputError``
    (bad input, before any output is started) or ``PublishError``; an output
    being written is finalized and playable even when the render fails.
    """
    outputs = out if isinstance(out, Outputs) else Outputs(file=out)
    if frames is not None:
        if outputs.frames is not None:
            raise InputError("frames is given twice: as render(frames=...) and in Outputs(frames=...); give one")
        outputs = dataclasses.replace(outputs, frames=frames)
    # the checks the CLI made before importing torch: a mistake is told before the model's code loads
    upscaler = Upscale(upscale, upscale_weights, upscale_options)
    check_render_inputs(audio, reference, outputs, report, trace, seed=seed, model=model, weights=weights, model_options=model_options, upscale=upscaler)
    set_threads(threads, follow_machine=not deterministic)
    if audio is None:
        audio = DEFAULT_SPEECH
    opened: AudioFileSource | None = None  # a file is ours to close
    source: Iterable[PcmBlock]
    if isinstance(audio, (str, os.PathLike)):
        source = opened = open_audio_file(audio)
    else:
        source = audio
    try:
        rank, run_device = init_rank(resolve_device(str(device)), parallel)
        try:
            with contextlib.nullcontext() if rank.publishes else stops_every_rank(rank.groups):  # a follower's failure reaches rank 0
                return _render(source, reference, outputs, rank, run_device, prompt=prompt, model=model, weights=weights,
                               model_options=model_options, upscale=upscaler, residency=residency, overlap=overlap, compile=compile, seed=seed,
                               preset=preset, report=report, trace=trace, progress=progress)  # fmt: skip
        finally:
            finish(rank)
    finally:
        if opened is not None:
            opened.close()


def _print_warning(text: str) -> None:
    tqdm.write(f"warning: {text}", file=sys.stderr)  # above the progress bar, if one is drawn


def _kept_preview(outputs: Outputs, sinks: Iterable[Sink]) -> PreviewServer | None:
    """The preview server that outlives the render (``keep_preview``), if there is one."""
    if not (outputs.preview and outputs.keep_preview):
        return None
    from avatarstream.publish.preview import PreviewServer  # outputs.open has loaded it already

    return next((s for s in sinks if isinstance(s, PreviewServer)), None)


def open_model(
    model: str | Family,
    weights: PathLike | None,
    model_options: FamilyOptions | Mapping[str, Any] | None,
    device: torch.device,
    warnings: Warnings,
    upscale: Upscale = NO_UPSCALE,
) -> tuple[Family, str, FamilyOptions]:
    """The family to run (loaded now when ``model`` is a name; followed by ``upscale``'s upscaler when it names one), its
    name and its parsed options; what the model warns of goes into ``warnings``. Shared by ``render`` and the voice-agent
    integrations, which take the same arguments."""
    if isinstance(model, str):
        options = options_class(model).parse(model_options)
        with collecting(warnings):
            family = load_family(model, weights, options, device=device)
            family = upscale.load(family, device=device)
        name = model
    else:
        options = model.Options.parse(model_options)
        if weights is not None or options.given("load"):
            raise InputError("weights and the model's load options choose how a model is loaded; pass them to load_family, not with a loaded family")
        with collecting(warnings):
            family, name = upscale.load(model, device=device), model.name
    warnings.extend(model_warnings(family))
    return family, name, options


def _render(
    audio: Iterable[PcmBlock], reference: PathLike | None, outputs: Outputs, rank: RankInfo, device: torch.device, *,
    prompt: str, model: str | Family, weights: PathLike | None, model_options: FamilyOptions | Mapping[str, Any] | None, upscale: Upscale, residency: str,
    overlap: bool | None, compile: bool, seed: int, preset: str, report: PathLike | None, trace: PathLike | None, progress: bool,
) -> RenderResult:  # fmt: skip
    load_start = time.perf_counter()
    warnings = Warnings(on_new=_print_warning if rank.publishes else None)  # rank 0 speaks for every rank
    family, name, options = open_model(model, weights, model_options, device, warnings, upscale)
    pipeline = build_pipeline(family, device, options, residency=parse_residency(residency, family.modules),
                              overlap=device.type == "cuda" if overlap is None else overlap, read_ahead=True, parallel=rank.groups)  # fmt: skip
    if compile:
        pipeline.compile()
    pipeline.prepare()
    load_s = time.perf_counter() - load_start

    with collecting(warnings):
        image = family.reference(Path(reference) if reference is not None else None, options)
    if not rank.publishes:  # the other ranks follow rank 0's run; only rank 0 writes
        pipeline.follow()
        return RenderResult({}, [])
    duration = getattr(audio, "duration_s", None)
    rate = getattr(audio, "sample_rate", None)
    if isinstance(rate, int):  # a file says its rate when it is opened
        warnings.extend(filter(None, [audio_rate_warning(rate, pipeline.model_sample_rate)]))
    else:  # a live source, with its first block
        audio = warn_on_audio_rate(audio, pipeline.model_sample_rate, warnings)
    assert pipeline.frame_size is not None, "a family's pipeline knows its size"
    width, height = pipeline.frame_size  # the size the family fitted the reference to, or an upscaler's
    try:
        settings = EncoderSettings(width=width, height=height, fps=family.fps, preset=preset)
    except ValueError as exc:
        raise InputError(str(exc)) from exc
    runtime = pipeline.runtime
    recorder = ReportRecorder(
        runtime.peak_device_bytes,
        extra={
            "model": name, "weights": family.weights, "device": str(device), "resolution": [width, height], "fps": family.fps,
            "settings": pipeline.settings, "load_s": round(load_s, 4), "processes": rank.world_size, "parallel": rank.layout.text(),
            "numa": dataclasses.asdict(rank.binding) if rank.binding else None,
        },
        late_fields={"cpu": cpu_report, "stage_switches": runtime.switch_summary, "runtime": runtime.summary, "warnings": warnings.list},
        chunk_fields=runtime.take_chunk_stats,
    )  # fmt: skip
    observers: list[Any] = [recorder]
    tracer = TraceWriter(Path(trace)) if trace is not None else None
    if tracer is not None:
        observers.append(tracer)
    with removed_on_failure(outputs):
        publisher = outputs.open(settings)
    kept = _kept_preview(outputs, publisher.sinks)
    try:
        with (
            stop_requests.at_chunk_boundaries(),
            publisher,
            tqdm(total=pipeline.video_frames(duration) if duration else None, unit="frame", disable=not progress, desc="render") as bar,
        ):
            for media in pipeline.stream(audio, image, prompt, seed=seed, observers=observers):
                publisher.submit(media)
                bar.update(media.num_frames)
                stop_requests.raise_if_requested()
    except BaseException:
        if kept is not None:  # nobody holds it to stop it later
            kept.stop()
        raise
    finally:
        if tracer is not None:
            tracer.close()
        recorder.extra["outputs"] = [{**dataclasses.asdict(r), "complete": r.complete} for r in publisher.reports]
        summary = recorder.write(Path(report)) if report is not None else recorder.summary()
        recorder.close()
        for sink_report in publisher.reports:
            if sink_report.failed:
                print(f"error: output {sink_report.name} is incomplete: {sink_report.summary()}", file=sys.stderr)
            elif not sink_report.complete:
                print(f"warning: output {sink_report.name} did not deliver everything: {sink_report.summary()}", file=sys.stderr)
    return RenderResult(summary, publisher.reports, kept)
