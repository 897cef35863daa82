"""A Kinesis Video Streams endpoint that refuses, resets or stalls mid-upload, while a session generates.

One Publisher feeds an MP4 file and a KVS sink (the local PutMedia service, tests/publish/kvs/fake_kvs.py) from a
producer paced like a live session. Whatever the service does, generation keeps its pace (against a run without KVS),
the MP4 holds every frame, the sink reconnects after the backoff its Backoff gives, resumes the upload where the
service left off, and its report counts exactly the packets the service did not get.
"""

from __future__ import annotations

import itertools
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "publish" / "kvs"))  # the Kinesis tests' fake service

from fake_kvs import FakeKvs, Faults
from kvs_harness import fake_sink
from kvs_media import decode_mkv

from avatarstream.publish.publisher import Publisher
from avatarstream.publish.runner import Backoff
from avatarstream.publish.settings import EncoderSettings
from avatarstream.publish.sink import Sink, SinkReport
from avatarstream.publish.sinks import Mp4FileSink
from mp4_checks import colour, decode, make_chunks

SETTINGS = EncoderSettings(width=64, height=48, fps=25, preset="ultrafast", keyframe_interval_s=0.4)  # a fragment per 10 frames
CHUNKS, CHUNK_FRAMES, PACE_S = 20, 5, 0.1  # 4 s of video made in 2 s: a live session running at twice real time
FAULT_AT = 2  # the fragment (0 = first) the fault strikes: about 0.6 s in
BACKOFF = Backoff(first_s=0.1, max_s=0.8)
ACK_TIMEOUT_S = 0.6  # how long fragments wait for a word from the service before the connection is given up


@dataclass(frozen=True)
class Run:
    reports: list[SinkReport]
    generating_s: float  # from the first submit to the last one's return (closing excluded: KVS may still deliver then)
    generated_by: float  # time.monotonic() when generation ended


def generate(sinks: list[Sink]) -> Run:
    """Submit the chunks on a live session's schedule; a submit that waits makes the run late."""
    chunks = make_chunks([CHUNK_FRAMES] * CHUNKS, SETTINGS.width, SETTINGS.height, SETTINGS.fps)
    with Publisher(SETTINGS, sinks) as publisher:
        start = time.monotonic()
        for i, chunk in enumerate(chunks):
            time.sleep(max(0.0, start + i * PACE_S - time.monotonic()))
            publisher.submit(chunk)
        generated_by = time.monotonic()
    return Run(publisher.reports, generated_by - start, generated_by)


# name: (faults, buffered fragments, retries: the failed connections before the one that resumed)
SCENARIOS = {
    # an ERROR acknowledgement (internal error), then PutMedia's two throttling refusals (HTTP 400)
    "refused": (Faults(error_at={FAULT_AT: 5000}, refuse={1: (400, "ClientLimitExceededException"), 2: (400, "ConnectionLimitExceededException")}), 60, 3),
    "reset": (Faults(reset_at={FAULT_AT}), 60, 1),  # a TCP RST halfway through a fragment
    "reset, then unanswered": (Faults(reset_at={FAULT_AT}, hang={1}), 60, 2),  # the next request gets no status line
    # the service stops reading and acknowledging halfway through a fragment; one buffered fragment, so some are lost
    "stalled": (Faults(stall_at={FAULT_AT}), 1, 1),
}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_kvs_fault_costs_only_what_the_report_says(tmp_path: Path, scenario: str) -> None:
    faults, buffered, retries = SCENARIOS[scenario]
    baseline = generate([Mp4FileSink(tmp_path / "baseline.mp4")])
    out = tmp_path / "out.mp4"
    with FakeKvs(faults) as kvs:
        sink = fake_sink(kvs.endpoint_url, backoff=BACKOFF, ack_timeout_s=ACK_TIMEOUT_S, max_buffered_fragments=buffered)
        run = generate([Mp4FileSink(out), sink])
    mp4, kvs_report = run.reports

    # generation kept its pace: the service's trouble reached no submit()
    assert run.generating_s / baseline.generating_s < 1.2, (run.generating_s, baseline.generating_s)
    # the file is whole: every frame, each the colour it was made with
    assert mp4.complete and not mp4.failed, mp4
    frames = decode(out).frames
    assert len(frames) == CHUNKS * CHUNK_FRAMES
    assert max(float(np.abs(f.astype(int) - colour(i)).mean()) for i, f in enumerate(frames)) < 6

    # the sink retried once per failed connection, each after its backoff (doubling), and resumed during generation
    connections = kvs.connections
    assert kvs.problems == []
    assert kvs_report.retries == retries == len(connections) - 1, (kvs_report, [c.ended for c in connections])
    for failures, (failed, following) in enumerate(itertools.pairwise(connections), start=1):
        assert failed.faulted_at is not None and failed.ended_at is not None, failed
        if failed.ended.startswith("stalled") or failed.status == 0:  # silent: the sink gave up after the ack timeout, no sooner
            assert following.opened_at - (failed.acked_at or failed.opened_at) >= ACK_TIMEOUT_S + BACKOFF.delay(failures)
        else:  # the service ended it
            assert following.opened_at - failed.ended_at >= BACKOFF.delay(failures), (failures, connections)
    resumed = connections[-1]
    assert resumed.opened_at < run.generated_by  # detected and reconnected while the session was still generating
    assert resumed.fragments and resumed.fragments[-1] == kvs.timecodes()[-1]  # it carried the upload to the end

    # the report says exactly what the service did not get
    sent = mp4.packets_delivered  # the file took every packet of the encode
    stored = [f for s in kvs.stored for f in s.frames]
    assert kvs_report.packets_delivered == len(stored)
    assert kvs_report.packets_dropped == sent - len(stored)
    assert len(decode_mkv(kvs.mkv()).frames) == sum(f.track == 1 for f in stored)  # what did arrive decodes
    if buffered > 1:  # room for what accumulated while the service was away: nothing lost, every fragment once
        assert kvs_report.complete, kvs_report
        assert len(kvs.stored) == CHUNKS * CHUNK_FRAMES // SETTINGS.gop
        assert resumed.fragments[0] == kvs.timecodes()[FAULT_AT]  # resumed at the fragment the fault struck
    else:  # fragments made while the stalled one waited had nowhere to go: lost, counted and explained
        assert kvs_report.packets_dropped > 0
        assert any(e.startswith(f"{kvs_report.packets_dropped} packets not delivered; last failure: ") for e in kvs_report.errors), kvs_report
