"""The chunk loop's streams on a GPU: races, device-wide syncs and what makes the host wait.

The same audio runs inline (one stream) and overlapped (final stages and the
read-ahead on streams of their own). A missing event or ``record_stream``
between streams shows as frames that differ from the inline run's, so the
frames are compared bit for bit. Each run reports its device-wide syncs and
host syncs per chunk (``DeviceOps``), and, on CUDA, runs under
``torch.cuda.set_sync_debug_mode("warn")``: every operation that makes the
host wait for a stream (a blocking copy, ``.item()``) warns, and the warnings
are counted by the line that caused them. From the first stretch on (the steady
state) ``--sync-debug error`` (the default) makes CUDA refuse any such
operation but the allowed frame reads (``runtime.sync_debug``): a stray sync
stops that run, and its record names the line.

    python -m avatarstream.benchmarks.gpu_streams --out DIR                              # a CUDA GPU, the default model
    python -m avatarstream.benchmarks.gpu_streams --out DIR --device cpu --model MODEL   # a dry run (gpu_all.sh --dry-run: the smallest)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import traceback
import warnings
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch

from avatarstream.benchtools.audio import bundled_speech, looped
from avatarstream.benchtools.measure import measure
from avatarstream.families.assemble import build_pipeline
from avatarstream.families.base import Family
from avatarstream.families.registry import DEFAULT_MODEL, load_family
from avatarstream.runtime.devices import resolve_device
from avatarstream.runtime.sync_debug import MODES, count_sync_warnings, refused_at, steady_sync_debug

RESULT_FILE = "streams.json"
#: Each run: whether the final stages and the read-ahead get their own threads and streams.
VARIANTS = {"inline": False, "overlapped": True}


@contextlib.contextmanager
def host_waits(device: torch.device) -> Iterator[Counter[str]]:
    """Count, by the avatarstream line that caused it, every op that made the host wait for a stream (CUDA only)."""
    found: Counter[str] = Counter()
    if device.type != "cuda":
        yield found
        return
    previous = torch.cuda.get_sync_debug_mode()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            yield found
        finally:
            torch.cuda.set_sync_debug_mode(previous)
    count_sync_warnings(caught, found)


def run(family: Family, device: torch.device, seconds: float, variant: str, sync_debug: str) -> dict[str, Any]:
    pipeline = build_pipeline(family, device, {}, overlap=VARIANTS[variant], read_ahead=VARIANTS[variant])
    pipeline.prepare()
    rate = pipeline.model_sample_rate
    with host_waits(device) as waits, steady_sync_debug(device, sync_debug):
        report = measure(pipeline, family.reference(None), looped(bundled_speech(rate), rate, seconds), keep_frames=True)
    runtime = pipeline.runtime.summary()
    chunks = max(report["num_chunks"], 1)
    return {
        "overlapped": pipeline.overlap,
        "realtime_factor": report["realtime_factor"],
        "ttff_s": report["ttff_s"],
        "chunks": report["num_chunks"],
        "device_syncs_per_chunk": runtime["device_syncs"] / chunks,
        "host_syncs_per_chunk": runtime["host_syncs"] / chunks,
        "host_waits_per_chunk": sum(waits.values()) / chunks,
        "host_waits_by_line": dict(waits.most_common(12)),
        "frames_array": report["frames_array"],
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for flag, kind, default, what in (
        ("--out", Path, None, f"folder for {RESULT_FILE}"),
        ("--device", str, "cuda", "cuda (the check) or cpu (a dry run)"),
        ("--model", str, DEFAULT_MODEL, "a model that needs no --weights (default: %(default)s, the bundled one)"),
        ("--seconds", float, 8.0, "audio per run"),
    ):
        parser.add_argument(flag, type=kind, default=default, required=default is None, help=what)
    parser.add_argument(
        "--sync-debug", choices=MODES, default="error", help="CUDA's sync debug mode in the steady state (default: %(default)s; a no-op on a CPU)"
    )
    args = parser.parse_args(argv)
    device = resolve_device(args.device)
    family = load_family(args.model, device=device)
    result: dict[str, Any] = {"model": args.model, "device": str(device), "seconds": args.seconds, "sync_debug": args.sync_debug, "runs": {}}
    for variant in VARIANTS:
        try:
            result["runs"][variant] = run(family, device, args.seconds, variant, args.sync_debug)
        except Exception as exc:  # noqa: BLE001 - reported in the result, the next variant still runs
            result["runs"][variant] = {"error": "".join(traceback.format_exception_only(exc)).strip(), "at": refused_at(exc)}
    frames = [r.pop("frames_array") for r in result["runs"].values() if "frames_array" in r]
    if len(frames) == 2:
        a, b = frames
        result["identical_frames"] = bool(a.shape == b.shape and np.array_equal(a, b))
        result["max_abs_frame_diff"] = int(np.abs(a.astype(np.int16) - b).max()) if a.shape == b.shape else None
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / RESULT_FILE).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}), flush=True)
    return result


if __name__ == "__main__":
    main()
