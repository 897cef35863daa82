"""Soak: the server at its session limit for many minutes, with clients and a sink that misbehave; fail on anything that trends upward.

The server runs as its own process (``avatarstream serve``) so that its RSS,
file descriptors and threads are measured from outside, as an operator would.
One client holds a session for the whole soak and also publishes to an RTMP
peer that is healthy, then gone, then stuck (``rtmp_peer.py``); the others
churn through sessions (soak_clients.py). Every ``sample_s`` the sampler
records the server's RSS (and its children's: the RTMP sender), descriptors,
threads and its Prometheus counters. The soak fails when a series rises from
the first third of the run to the last (trends.py), when a session's MP4
misses a frame it published, or when the RTMP sink did not recover.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import psutil
from prometheus_client.parser import text_string_to_metric_families

from avatarstream.benchmarks import plots
from avatarstream.benchmarks.local_server import ServerProcess, free_port
from avatarstream.benchmarks.soak_clients import RATE, SoakClients
from avatarstream.benchmarks.trends import Tolerance, trend
from avatarstream.benchtools.audio import bundled_speech
from avatarstream.errors import AvatarStreamError
from avatarstream.families.registry import DEFAULT_MODEL

#: the rise each series may show from the first third of the soak (after the warm-up) to the last
TOLERANCES = {
    "rss_mib": Tolerance(absolute=10.0, relative=0.01),  # before ended sessions were freed at once and arenas trimmed: +24..35 MiB in 2 min
    "fds": Tolerance(absolute=6, level="max"),  # a leak of one per session passes this within minutes
    "threads": Tolerance(absolute=6, level="max"),
    "ttff_s": Tolerance(absolute=0.5, relative=0.5),
    # 3 sessions publish ~4,300 frames a minute; on a saturated 2-core host, noise alone reached 34 underruns/min in a 2-minute run
    "underruns_per_min": Tolerance(absolute=60.0, relative=0.5, level="mean"),
}
METRICS = {
    "avatarstream_underruns": "underruns",
    "avatarstream_sessions_rejected": "rejected",
    "avatarstream_frames": "frames",
    "avatarstream_sessions": "sessions",
}


class SoakFailed(AvatarStreamError):
    """The soak found a series that trends upward, a lost frame or a sink that did not recover (exit code 1)."""


@dataclass(frozen=True)
class SoakSettings:
    model: str = DEFAULT_MODEL  # `bench --scenario soak` runs the --model it is given
    minutes: float = 30.0
    sessions: int = 3  # the server's --max-sessions: one anchor and sessions - 1 churning clients keep it full
    sample_s: float = 5.0
    idle_timeout_s: float = 6.0
    rtmp_healthy_s: float = 20.0
    rtmp_stuck_s: float = 12.0  # longer than the RTMP sink's write timeout (5 s): the sink must drop the peer and reconnect

    @property
    def warmup_s(self) -> float:
        return min(120.0, 0.2 * self.minutes * 60)


def measure_soak(settings: SoakSettings, out_dir: Path) -> dict[str, Any]:
    """Run the soak; the result holds the series, every session's record, the checks and ``passed``."""
    token = secrets.token_hex(16)
    rtmp_port = free_port()
    options = ["--model", settings.model, "--max-sessions", str(settings.sessions), "--idle-timeout", str(settings.idle_timeout_s), "--threads", "1",
               "--log-level", "warning"]  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="avatarstream-soak-") as scratch:
        peer_log = out_dir / "soak-rtmp-peer.jsonl"
        peer_command = [sys.executable, "-m", "avatarstream.benchmarks.rtmp_peer", str(rtmp_port), str(settings.rtmp_healthy_s), str(settings.rtmp_stuck_s)]
        with peer_log.open("wb") as peer_out, _running(peer_command, peer_out), ServerProcess(
            [*options, "--work-dir", str(Path(scratch) / "work")], token, out_dir / "soak-server.log"
        ) as server:  # fmt: skip
            clients = SoakClients(server.url, token, bundled_speech(RATE), Path(scratch), settings.idle_timeout_s)
            samples = asyncio.run(_drive(settings, server, clients, f"rtmp://127.0.0.1:{rtmp_port}/live/soak"))
            try:
                server.check_alive()
            except RuntimeError as err:
                clients.failures.append(str(err))
    result = _analyse(settings, samples, clients, _read_peer(peer_log))
    _plot(out_dir, samples, clients)
    return result


@contextlib.contextmanager
def _running(command: list[str], out: Any) -> Any:
    process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        yield process
    finally:
        process.kill()
        process.wait()


async def _drive(settings: SoakSettings, server: ServerProcess, clients: SoakClients, rtmp: str) -> list[dict[str, Any]]:
    until = settings.minutes * 60
    samples: list[dict[str, Any]] = []
    async with aiohttp.ClientSession(headers=clients.headers, timeout=aiohttp.ClientTimeout(total=60)) as http:
        sampler = asyncio.create_task(_reported(clients, "sampler", _sample(http, server, clients, settings.sample_s, samples)))
        users = [clients.anchor(http, until, rtmp), *(clients.churn(http, until, first=i) for i in range(settings.sessions - 1))]
        try:
            await asyncio.gather(*users)
        finally:
            sampler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sampler
    return samples


async def _reported(clients: SoakClients, name: str, work: Awaitable[None]) -> None:
    async with clients.reported(name):
        await work


async def _sample(http: aiohttp.ClientSession, server: ServerProcess, clients: SoakClients, every_s: float, samples: list[dict[str, Any]]) -> None:
    process = psutil.Process(server.pid)
    while True:
        server.check_alive()
        children = process.children(recursive=True)
        async with http.get(f"{server.url}/metrics") as answer:
            counters = _counters(await answer.text())
        samples.append({
            "t_s": round(clients.now(), 2),
            "rss_mib": round(process.memory_info().rss / 2**20, 2),
            "children_rss_mib": round(sum(_rss(child) for child in children) / 2**20, 2),
            "fds": process.num_fds(),
            "threads": process.num_threads(),
            "children": len(children),
            **counters,
        })  # fmt: skip
        await asyncio.sleep(every_s)


def _rss(process: psutil.Process) -> int:
    try:
        return int(process.memory_info().rss)
    except psutil.NoSuchProcess:  # a sender that ended between listing and reading
        return 0


def _counters(text: str) -> dict[str, float]:
    """The server's Prometheus counters the soak follows, summed over their labels."""
    found = dict.fromkeys(METRICS.values(), 0.0)
    for family in text_string_to_metric_families(text):
        if family.name in METRICS:
            found[METRICS[family.name]] += sum(s.value for s in family.samples if not s.name.endswith("_created"))
    return found


def _read_peer(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")]


def _analyse(settings: SoakSettings, samples: list[dict[str, Any]], clients: SoakClients, peer: list[dict[str, Any]]) -> dict[str, Any]:
    times = [s["t_s"] for s in samples]
    trends = {name: trend(times, [s[name] for s in samples], TOLERANCES[name], settings.warmup_s) for name in ("rss_mib", "fds", "threads")}
    ended = [r for r in clients.records if r.ended_at is not None]
    trends["ttff_s"] = trend([r.created_at for r in ended], [r.ttff_s or 0.0 for r in ended], TOLERANCES["ttff_s"], settings.warmup_s)
    per_min = _underruns_per_minute(samples)
    trends["underruns_per_min"] = trend(times[1:], per_min, TOLERANCES["underruns_per_min"], settings.warmup_s)
    lost = [r.as_dict() for r in ended if r.file_frames != r.frames or r.error]
    healthy = [p for p in peer if p["phase"] == "healthy"]
    stalls = sum(1 for p in peer if p["phase"] == "stuck" and p.get("accepted"))
    recovered = sum(1 for p in healthy[1:] if p["packets"] > 0)
    rtmp = {"phases": len(peer), "stuck_peers_dropped": stalls, "healthy_phases": len(healthy), "recovered_after_stall": recovered,
            "packets_per_healthy_phase": [p["packets"] for p in healthy]}  # fmt: skip
    rtmp_ok = stalls >= 1 and recovered >= min(stalls, len(healthy) - 1) and bool(healthy) and healthy[0]["packets"] > 0
    checks = {
        **{name: t["ok"] for name, t in trends.items()},
        "no_frame_lost": not lost,
        "rtmp_recovered": rtmp_ok,
        "sessions_ran": len(ended) >= settings.sessions,
        "clients_ran": not clients.failures,
    }
    return {
        "model": settings.model, "minutes": settings.minutes, "sessions": settings.sessions, "sample_s": settings.sample_s,
        "warmup_s": settings.warmup_s, "cores": len(os.sched_getaffinity(0)),
        "passed": all(checks.values()), "checks": checks, "trends": trends, "rtmp_peer": rtmp,
        "sessions_total": len(clients.records), "sessions_ended": len(ended), "refused_503": clients.refused,
        "client_failures": clients.failures,
        "frames_delivered": sum(r.file_frames or 0 for r in ended), "frames_lost": lost,
        "ttff_s_median": statistics.median(r.ttff_s for r in ended if r.ttff_s is not None) if ended else None,
        "peak_rss_mib": max((s["rss_mib"] for s in samples), default=None),
        "by_behaviour": {b: sum(1 for r in ended if r.behaviour == b) for b in sorted({r.behaviour for r in ended})},
        "samples": samples, "records": [r.as_dict() for r in clients.records],
    }  # fmt: skip


def _underruns_per_minute(samples: list[dict[str, Any]]) -> list[float]:
    return [60 * (b["underruns"] - a["underruns"]) / max(b["t_s"] - a["t_s"], 1e-6) for a, b in itertools.pairwise(samples)]


def _plot(out_dir: Path, samples: list[dict[str, Any]], clients: SoakClients) -> None:
    minutes = [s["t_s"] / 60 for s in samples]
    plots.lines(out_dir / "soak-memory.png", minutes, {"server RSS (MiB)": [s["rss_mib"] for s in samples], "RTMP sender RSS (MiB)":
                [s["children_rss_mib"] for s in samples]}, xlabel="minutes", title="soak: memory")  # fmt: skip
    plots.lines(out_dir / "soak-handles.png", minutes, {"file descriptors": [s["fds"] for s in samples], "threads": [s["threads"] for s in samples],
                "sessions": [s["sessions"] for s in samples]}, xlabel="minutes", title="soak: descriptors, threads, sessions")  # fmt: skip
    plots.lines(out_dir / "soak-delivery.png", minutes, {"frames published (k)": [s["frames"] / 1e3 for s in samples], "underruns": [s["underruns"] for s in samples],
                "503s": [s["rejected"] for s in samples]}, xlabel="minutes", title="soak: delivery")  # fmt: skip
    ended = [r for r in clients.records if r.ttff_s is not None]
    plots.lines(out_dir / "soak-ttff.png", [r.created_at / 60 for r in ended], {"time to first frame (s)": [r.ttff_s or 0.0 for r in ended]},
                xlabel="minutes (session start)", title="soak: time to first frame per session")  # fmt: skip
