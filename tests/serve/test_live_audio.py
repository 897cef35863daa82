"""The live source's promises, on a fake clock: speech when queued, silence when not, never more than
the look-ahead ahead of the wall clock, interrupts drop the queue, late pulls count as underruns."""

from __future__ import annotations

import asyncio

import numpy as np

from avatarstream.serve.audio_input import RATE, PcmDecoder, PcmSegment
from avatarstream.serve.live_audio import LiveAudio

FPS = 25
LOOKAHEAD_S = 0.24


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def make(clock: FakeClock, **kw) -> LiveAudio:
    return LiveAudio(fps=FPS, lookahead_s=LOOKAHEAD_S, max_queued_s=2.0, clock=clock, **kw)


async def play(live: LiveAudio, clock: FakeClock, seconds: float) -> np.ndarray:
    """Move the clock on in steps of one frame, pulling like a pipeline that keeps up."""
    out = []
    for _ in range(round(seconds * FPS)):
        clock.now += 1 / FPS
        out += await pull_until_waiting(live)
    return np.concatenate(out)


async def pull_until_waiting(live: LiveAudio) -> list[np.ndarray]:
    """Every block the source hands out before it would wait for the clock."""
    blocks = []
    while True:
        try:
            block = await asyncio.wait_for(anext(live), 0.05)
        except TimeoutError:
            return blocks
        blocks.append(block.samples[0])


def test_pacing_silence_speech_and_interrupt() -> None:
    async def scenario() -> None:
        clock = FakeClock()
        live = make(clock)
        idle = np.concatenate(await pull_until_waiting(live))
        assert idle.size == round(LOOKAHEAD_S * RATE) and not idle.any()  # silence, exactly the look-ahead

        live.push(PcmSegment(np.full(RATE * 3, 0.5, np.float32)))
        assert await pull_until_waiting(live) == []  # queued speech does not run ahead of the clock either
        spoken = await play(live, clock, 1.0)
        assert abs(spoken.size - RATE) <= RATE // FPS and (spoken == 0.5).all()
        assert live.speech_fraction(0, 6) == 0 and live.speech_fraction(7, 20) == 1.0

        cut = live.interrupt()
        assert abs(cut.dropped_s - 2.0) < 1e-3 and cut.idle_in_s <= LOOKAHEAD_S + 1e-6
        assert abs(cut.idle_from_frame - (LOOKAHEAD_S + 1.0) * FPS) <= 1
        after = await play(live, clock, 0.5)
        assert after.size and not after.any() and live.queued_s == 0 and live.underruns == 0

        clock.now += 5.0  # the pipeline stalled for 5 s
        await anext(live)
        assert live.underruns == 1
        assert sum(b.size for b in await pull_until_waiting(live)) < LOOKAHEAD_S * RATE  # no backlog of idle time
        live.close()
        assert await anext(live, None) is None

    asyncio.run(scenario())


def test_full_queue_makes_the_sender_wait() -> None:
    async def scenario() -> None:
        clock = FakeClock()
        live = make(clock)
        live.push(PcmSegment(np.zeros(RATE * 3, np.float32)))
        waiter = asyncio.ensure_future(live.wait_for_room())
        await asyncio.sleep(0.01)
        assert not waiter.done()
        await pull_until_waiting(live)
        await play(live, clock, 1.5)
        await asyncio.wait_for(waiter, 1)

    asyncio.run(scenario())


def test_pcm_decoder_resamples_and_checks_framing() -> None:
    decoder = PcmDecoder("s16le", 16000, 1)
    out = np.concatenate([decoder.decode((np.ones(1600) * 16384).astype("<i2").tobytes()) for _ in range(10)])
    assert abs(out.size - RATE) < 200 and abs(float(np.median(out)) - 0.5) < 0.01
    stereo = PcmDecoder("f32le", 44100, 2).decode(np.zeros((4410, 2), "<f4").tobytes())
    assert abs(stereo.size - RATE // 10) < 200
    decoder = PcmDecoder("s16le", 16000, 2)
    try:
        decoder.decode(b"\x00\x01\x02")
    except Exception as err:  # noqa: BLE001
        assert "whole sample frames" in str(err)
    else:
        raise AssertionError("half a frame was accepted")
