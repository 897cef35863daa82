"""The soak's short form: the real server process at its session limit for 2 minutes, churning clients, an RTMP peer that
goes away and hangs; and the rule that fails a series that keeps rising."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from avatarstream.benchmarks.soak import SoakSettings, _analyse
from avatarstream.benchmarks.soak_clients import SessionRecord, SoakClients
from avatarstream.benchmarks.trends import Tolerance, trend

MINUTE = [float(t) for t in range(0, 60, 2)]


def test_a_leak_fails_and_noise_passes() -> None:
    flat = [500 + (7 * i % 5) for i in range(len(MINUTE))]  # +-2 MiB of noise
    leak = [500 + 1.0 * i for i in range(len(MINUTE))]  # 1 MiB per sample: +20 MiB from the first third to the last
    tolerance = Tolerance(absolute=8.0, relative=0.01)
    assert trend(MINUTE, flat, tolerance, warmup_s=10)["ok"]
    rising = trend(MINUTE, leak, tolerance, warmup_s=10)
    assert not rising["ok"] and rising["rise"] > rising["allowed"]
    start_spike = [900.0] * 5 + flat[5:]  # the warm-up is ignored
    assert trend(MINUTE, start_spike, tolerance, warmup_s=10)["ok"]
    swinging = [10 + (i % 3) * 20 for i in range(len(MINUTE))]  # threads going up and down with the sessions open
    assert trend(MINUTE, swinging, Tolerance(absolute=2, level="max"), warmup_s=0)["ok"]
    assert not trend(MINUTE[:4], flat[:4], tolerance, warmup_s=10)["ok"], "too few samples is a failure, not a pass"


def test_a_session_whose_file_misses_frames_fails_the_soak(tmp_path: Path) -> None:
    clients = SoakClients("http://127.0.0.1:1", "token-0123456789", speech=None, scratch=tmp_path, idle_timeout_s=6.0)  # type: ignore[arg-type]
    samples = [{"t_s": t, "rss_mib": 500.0, "fds": 12, "threads": 40, "underruns": 0.0} for t in MINUTE]
    whole = [SessionRecord("clean", created_at=t, ttff_s=0.3, ended_at=t + 5, state="closed", frames=100, file_frames=100) for t in MINUTE[::3]]
    peer = [{"phase": "healthy", "packets": 50}, {"phase": "stuck", "accepted": True}, {"phase": "healthy", "packets": 40}]
    settings = SoakSettings(minutes=1.0, sessions=3)
    clients.records = whole
    assert _analyse(settings, samples, clients, peer)["passed"]
    clients.records = [*whole, SessionRecord("walk-away", created_at=30.0, ttff_s=0.3, ended_at=40.0, state="closed", frames=100, file_frames=97)]
    result = _analyse(settings, samples, clients, peer)
    assert not result["passed"] and not result["checks"]["no_frame_lost"] and result["frames_lost"][0]["file_frames"] == 97
    never_recovered = [*peer[:2], {"phase": "healthy", "packets": 0}]
    clients.records = whole
    assert not _analyse(settings, samples, clients, never_recovered)["checks"]["rtmp_recovered"]
    clients.failures = ["churn 0 at 31.0 s: RuntimeError: session creation answered 500"]
    crashed = _analyse(settings, samples, clients, peer)
    assert not crashed["passed"] and not crashed["checks"]["clients_ran"] and crashed["client_failures"] == clients.failures


@pytest.mark.slow
def test_two_minute_soak(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "avatarstream.cli.main", "bench", "--scenario", "soak", "--model", "demo-tiny", "--minutes", "2", "--out", str(tmp_path)]
    done = subprocess.run(command, check=False, capture_output=True, text=True, timeout=600)
    report = tmp_path / "soak.json"
    assert report.exists(), f"the soak wrote no report (exit {done.returncode}): {done.stderr[-3000:]}"
    result = json.loads(report.read_text())
    assert done.returncode == 0, (done.stderr[-2000:], {k: v for k, v in result.items() if k not in ("samples", "records")})
    assert result["passed"] and all(result["checks"].values())
    behaviours = result["by_behaviour"]
    assert behaviours["anchor"] == 1 and min(behaviours[b] for b in ("clean", "interrupt-and-vanish", "walk-away")) >= 2, behaviours
    assert result["rtmp_peer"]["stuck_peers_dropped"] >= 1 and result["rtmp_peer"]["recovered_after_stall"] >= 1
    assert result["frames_delivered"] > 1000 and not result["frames_lost"]
    assert all(r["file_frames"] == r["frames"] > 0 for r in result["records"])
    assert max(s["sessions"] for s in result["samples"]) == 3, "the server ran at its session limit"
    for plot in ("soak-memory.png", "soak-handles.png", "soak-delivery.png", "soak-ttff.png"):
        assert (tmp_path / plot).stat().st_size > 1000
