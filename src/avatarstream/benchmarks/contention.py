"""Renders next to a competing CPU job: how much each CPU threading setting slows down when the machine is shared.

Every run is a fresh ``avatarstream render`` process, since OpenMP reads its
wait policy once, when torch loads. The competing job is another program's
torch matmul loop on every core, with OpenMP's own defaults.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
import wave
from pathlib import Path
from typing import Any

import numpy as np
from typing_extensions import Self

from avatarstream.benchtools.audio import bundled_speech, looped_array

#: name -> (extra environment, extra render options); "{cores}" stands for this machine's core count
VARIANTS: dict[str, tuple[dict[str, str], list[str]]] = {
    "default": ({}, []),  # what a user gets: OpenMP's own wait policy; every core on a quiet machine, one thread beside a busy program
    "passive": ({"OMP_WAIT_POLICY": "PASSIVE"}, ["--threads", "{cores}"]),  # the default until 2026-12-02: idle workers sleep at once
    "spinning": ({}, ["--threads", "{cores}"]),  # OpenMP's own policy on every core, whatever the load: the behaviour before 2026-12-01
    "threads=1": ({}, ["--threads", "1"]),
}
COMPETING_JOB = """
import torch
a = torch.randn(512, 512)
while True:
    a @ a
"""
RATE = 16000
OPENMP_SETTINGS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_NUM_THREADS")
RUN_TIMEOUT_S = 900


def measure_contention(model: str, seconds: float, repeats: int, out_dir: Path, variants: tuple[str, ...] = tuple(VARIANTS)) -> dict[str, Any]:
    """Median real-time factor and first frame of each variant alone and next to the competing job, and the slowdown."""
    audio = out_dir / "contention-speech.wav"
    _write_wav(audio, looped_array(bundled_speech(RATE), RATE, seconds))
    rows, cores = [], len(os.sched_getaffinity(0))
    try:
        for name in variants:
            env, options = VARIANTS[name]
            options = [option.format(cores=cores) for option in options]
            alone = [_render(model, audio, env, options, out_dir) for _ in range(repeats)]
            with _CompetingJob() as job:
                loaded = [_render(model, audio, env, options, out_dir) for _ in range(repeats)]
                job.check_alive()
            rows.append(_row(name, env, options, alone, loaded))
    finally:
        audio.unlink(missing_ok=True)
    return {"model": model, "cores": cores, "competing_job": "torch matmul on every core, OpenMP defaults", "rows": rows}


def measure_load_memory(model: str, seconds: float, repeats: int, out_dir: Path, longer: float = 9.0) -> dict[str, Any]:
    """Peak RSS of a render of ``seconds`` and of one ``longer`` times as long, both next to the competing job: a run's memory must
    not grow with its length when the machine is busy (median of ``repeats`` fresh processes each)."""
    rows = []
    with _CompetingJob() as job:
        for length in (seconds, seconds * longer):
            audio = out_dir / "load-memory-speech.wav"
            _write_wav(audio, looped_array(bundled_speech(RATE), RATE, length))
            try:
                runs = [_render(model, audio, {}, [], out_dir) for _ in range(repeats)]
            finally:
                audio.unlink(missing_ok=True)
            rows.append({"seconds": length, "peak_rss_mib": round(statistics.median(r["peak_rss_bytes"] for r in runs) / 2**20, 1),
                         "peak_rss_mib_all": [round(r["peak_rss_bytes"] / 2**20, 1) for r in runs],
                         "realtime_factor": round(statistics.median(r["realtime_factor"] for r in runs), 3)})  # fmt: skip
        job.check_alive()
    short, long = rows
    return {"model": model, "cores": len(os.sched_getaffinity(0)), "competing_job": "torch matmul on every core, OpenMP defaults", "rows": rows,
            "long_over_short": round(long["peak_rss_mib"] / short["peak_rss_mib"], 4)}  # fmt: skip


def _write_wav(path: Path, samples: np.ndarray) -> None:
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(RATE)
        out.writeframes((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())


def _row(name: str, env: dict[str, str], options: list[str], alone: list[dict[str, Any]], loaded: list[dict[str, Any]]) -> dict[str, Any]:
    rtf_alone = round(statistics.median(r["realtime_factor"] for r in alone), 3)
    rtf_loaded = round(statistics.median(r["realtime_factor"] for r in loaded), 3)
    return {
        "variant": name, "env": env, "options": options, "cpu": alone[0]["cpu"], "cpu_loaded": loaded[0]["cpu"],
        "realtime_factor_alone": rtf_alone, "realtime_factor_loaded": rtf_loaded,
        "ttff_s_alone": round(statistics.median(r["ttff_s"] for r in alone), 3), "ttff_s_loaded": round(statistics.median(r["ttff_s"] for r in loaded), 3),
        "slowdown": round(rtf_alone / rtf_loaded, 2),
    }  # fmt: skip


def _render(model: str, audio: Path, env: dict[str, str], options: list[str], out_dir: Path) -> dict[str, Any]:
    report = out_dir / "contention-report.json"
    video = out_dir / "contention.mp4"
    command = [sys.executable, "-m", "avatarstream.cli.main", "render", "--model", model, "--audio", str(audio), "--out", str(video),
               "--report", str(report), "--no-progress", *options]  # fmt: skip
    inherited = {k: v for k, v in os.environ.items() if k not in OPENMP_SETTINGS}  # each variant's own, on a user's shell
    try:
        subprocess.run(command, env={**inherited, **env}, check=True, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        return json.loads(report.read_text())
    except subprocess.CalledProcessError as err:
        raise RuntimeError(f"render failed ({' '.join(options) or 'default'}): {err.stderr.strip()[-500:]}") from err
    finally:
        report.unlink(missing_ok=True)
        video.unlink(missing_ok=True)


class _CompetingJob:
    """The competing program, running for the duration of a ``with`` block."""

    def __enter__(self) -> Self:
        env = {k: v for k, v in os.environ.items() if k not in OPENMP_SETTINGS}  # another program: OpenMP defaults
        self._process = subprocess.Popen([sys.executable, "-c", COMPETING_JOB], env=env)
        time.sleep(1.0)  # let it take the cores
        self.check_alive()
        return self

    def check_alive(self) -> None:
        if self._process.poll() is not None:
            raise RuntimeError(f"the competing job exited early (code {self._process.returncode}); the loaded figures would be idle ones")

    def __exit__(self, *exc: object) -> None:
        self._process.kill()
        self._process.wait()
