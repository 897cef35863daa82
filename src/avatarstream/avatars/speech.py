"""Driving audio for the procedural avatars: espeak-ng speech mixed with silence and quiet non-speech.

Sentences are built from word lists by a seeded grammar; a sentence's seed
decides whether it belongs to the training or the held-out split, so
evaluation never hears a sentence the model was trained on. Voices, speeds,
pitches and gains vary per utterance.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SAMPLE_RATE = 16000
VOICES = ("en-us", "en-gb", "en-gb-scotland", "en-gb-x-rp", "en-029", "en-us-nyc", "en-gb-x-gbclan")
VARIANTS = ("", "+f1", "+f2", "+f3", "+f4", "+f5", "+m1", "+m2", "+m3", "+m4", "+m5", "+m7", "+klatt", "+klatt3")
HELD_OUT_EVERY = 5
"""Sentence seeds divisible by this are held out for evaluation."""

_SUBJECTS = (
    "the old captain",
    "my neighbour",
    "a quiet student",
    "the small robot",
    "our teacher",
    "the painter",
    "every morning the baker",
    "a tired traveller",
    "the young pilot",
    "her brother",
    "the city council",
    "a curious child",
    "the night nurse",
    "this orchestra",
    "the farmer next door",
    "my grandmother",
)
_VERBS = (
    "carried",
    "painted",
    "discovered",
    "forgot",
    "watched",
    "measured",
    "borrowed",
    "repaired",
    "described",
    "ordered",
    "followed",
    "opened",
    "explained",
    "wrapped",
    "counted",
    "collected",
)
_OBJECTS = (
    "a bright yellow kite",
    "seven wooden boxes",
    "the broken window",
    "an enormous map of the moon",
    "two cups of strong coffee",
    "the whole library",
    "a basket of ripe apples",
    "the blue umbrella",
    "every single letter",
    "a very long speech",
    "the heavy iron gate",
    "some fresh bread and cheese",
    "the quiet harbour",
    "a thousand paper birds",
    "our old television",
    "the secret recipe",
)
_TAILS = (
    "before the rain started",
    "without saying a word",
    "on a cold Tuesday",
    "while the music played",
    "just after midnight",
    "in the middle of the market",
    "because nobody else would",
    "with great care",
    "near the river",
    "during the long summer",
    "",
    "",
    "and then laughed",
    "at the end of the day",
)
_OPENERS = ("", "", "", "Well, ", "Yesterday ", "Honestly, ", "Last week ", "Believe it or not, ", "Oh, ")


def sentence(seed: int) -> str:
    rng = np.random.default_rng([seed, 0x5E])
    pick = lambda words: words[rng.integers(len(words))]
    text = f"{pick(_OPENERS)}{pick(_SUBJECTS)} {pick(_VERBS)} {pick(_OBJECTS)} {pick(_TAILS)}".strip()
    text = text[0].upper() + text[1:]
    return text + pick((".", ".", "!", "?"))


def is_held_out(sentence_seed: int) -> bool:
    return sentence_seed % HELD_OUT_EVERY == 0


def sentence_seeds(split: str, count: int, start: int = 0) -> list[int]:
    """The first `count` sentence seeds >= start of a split ('train' or 'heldout')."""
    want = split == "heldout"
    seeds: list[int] = []
    seed = start
    while len(seeds) < count:
        if is_held_out(seed) == want:
            seeds.append(seed)
        seed += 1
    return seeds


def espeak_available() -> bool:
    return shutil.which("espeak-ng") is not None


@dataclass(frozen=True)
class Voice:
    name: str
    speed: int
    pitch: int
    gain: float

    @classmethod
    def from_seed(cls, seed: int) -> Voice:
        rng = np.random.default_rng([seed, 0x70])
        name = VOICES[rng.integers(len(VOICES))] + VARIANTS[rng.integers(len(VARIANTS))]
        return cls(name, int(rng.integers(120, 200)), int(rng.integers(20, 80)), float(10 ** rng.uniform(-0.4, 0.15)))


def synthesize(text: str, voice: Voice) -> np.ndarray:
    """espeak-ng speech as float32 mono at 16 kHz, scaled by the voice's gain."""
    if not espeak_available():
        raise RuntimeError("espeak-ng is not installed; run scripts/system-deps.sh")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "speech.wav"
        subprocess.run(["espeak-ng", "-v", voice.name, "-s", str(voice.speed), "-p", str(voice.pitch), "-w", str(path), text], check=True, capture_output=True)
        with wave.open(str(path)) as wav:
            rate = wav.getframerate()
            data = np.frombuffer(wav.readframes(wav.getnframes()), dtype=np.int16).astype(np.float32) / 32768.0
    return (resample(data, rate, SAMPLE_RATE) * voice.gain).astype(np.float32)


def resample(x: np.ndarray, rate: int, target: int) -> np.ndarray:
    """Band-limited resampling by FFT (fine for the short utterances used here)."""
    if rate == target or len(x) == 0:
        return x
    n = round(len(x) * target / rate)
    spectrum = np.fft.rfft(x)
    keep = n // 2 + 1
    if keep <= len(spectrum):
        spectrum = spectrum[:keep]
    else:
        spectrum = np.pad(spectrum, (0, keep - len(spectrum)))
    return np.fft.irfft(spectrum, n) * (n / len(x))


def non_speech(seconds: float, rng: np.random.Generator) -> np.ndarray:
    """Silence, room tone, mains hum or a soft breath: all well under the level that opens the mouth."""
    n = round(seconds * SAMPLE_RATE)
    t = np.arange(n) / SAMPLE_RATE
    kind = rng.integers(4)
    if kind == 0:
        out = rng.normal(0, 1e-4, n)
    elif kind == 1:
        out = np.cumsum(rng.normal(0, 1, n))
        out = (out - np.convolve(out, np.ones(400) / 400, mode="same")) * 10 ** rng.uniform(-3.7, -3.2)
    elif kind == 2:
        out = 10 ** rng.uniform(-3.6, -3.0) * np.sin(2 * np.pi * rng.choice([50, 60]) * t) + rng.normal(0, 1e-4, n)
    else:
        envelope = np.sin(np.pi * np.clip(t / max(seconds, 1e-3), 0, 1)) ** 2
        out = rng.normal(0, 1, n) * envelope * 10 ** rng.uniform(-3.6, -3.1)
    return out.astype(np.float32)


def speech_track(seconds: float, seed: int, split: str, *, sentence_pool: int = 400) -> np.ndarray:
    """About `seconds` of audio: utterances of `split` sentences separated by non-speech gaps."""
    rng = np.random.default_rng([seed, 0xA0])
    pool = sentence_seeds(split, sentence_pool)
    parts = [non_speech(rng.uniform(0.2, 1.0), rng)]
    total = len(parts[0])
    target = round(seconds * SAMPLE_RATE)
    while total < target:
        sentence_seed = pool[rng.integers(len(pool))]
        utterance = synthesize(sentence(sentence_seed), Voice.from_seed(int(rng.integers(1 << 30))))
        gap = non_speech(rng.uniform(0.3, 1.5), rng)
        parts += [utterance, gap]
        total += len(utterance) + len(gap)
    return np.concatenate(parts)[:target]
