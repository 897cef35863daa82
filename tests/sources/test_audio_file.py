"""open_audio_file: formats, streaming, and the errors a user can cause."""

from __future__ import annotations

import re
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from sine_files import sine, write_sine

from avatarstream.errors import InputError
from avatarstream.sources.audio_file import open_audio_file

# name, codec, rate, channels, extra decoded samples the codec may add at the end
FORMATS = [
    ("s16_mono_16k.wav", "pcm_s16le", 16000, 1, 0),
    ("u8_mono_8k.wav", "pcm_u8", 8000, 1, 0),
    ("s24_stereo_22k.wav", "pcm_s24le", 22050, 2, 0),
    ("f32_stereo_44k.wav", "pcm_f32le", 44100, 2, 0),
    ("stereo_44k.mp3", "libmp3lame", 44100, 2, 1152),
    ("mono_48k.flac", "flac", 48000, 1, 0),
    ("stereo_48k_opus.ogg", "libopus", 48000, 2, 960),
    ("stereo_44k_vorbis.ogg", "vorbis", 44100, 2, 1024),
]


def read_all(path: Path) -> tuple[np.ndarray, int, int]:
    """Decoded samples, sample rate and channels."""
    with open_audio_file(path) as source:
        blocks = list(source)
        for block in blocks:
            assert block.samples.dtype == np.float32
            assert block.sample_rate == source.sample_rate
            assert block.samples.shape[0] == source.channels
        return np.concatenate([b.samples for b in blocks], axis=1), source.sample_rate, source.channels


@pytest.mark.parametrize(("name", "codec", "rate", "channels", "padding"), FORMATS, ids=[f[0] for f in FORMATS])
def test_decodes_format(tmp_path: Path, name: str, codec: str, rate: int, channels: int, padding: int) -> None:
    path = tmp_path / name
    written = write_sine(path, codec, rate, channels, seconds=1.0)

    samples, sample_rate, decoded_channels = read_all(path)

    assert sample_rate == rate
    assert decoded_channels == channels
    assert written <= samples.shape[1] <= written + padding
    assert np.abs(samples).max() <= 1.0
    expected = sine(0, written, rate, channels)
    for c in range(channels):
        correlation = np.corrcoef(samples[c, :written], expected[c])[0, 1]
        assert correlation > 0.95, f"channel {c} correlates {correlation:.3f} with the sine"


@pytest.mark.parametrize("name", ["mp3", "flac", "ogg", "wav"])
def test_header_duration(tmp_path: Path, name: str) -> None:
    codec = {"mp3": "libmp3lame", "flac": "flac", "ogg": "libopus", "wav": "pcm_s16le"}[name]
    path = tmp_path / f"two_seconds.{name}"
    write_sine(path, codec, 48000, 2, seconds=2.0)
    with open_audio_file(path) as source:
        assert source.duration_s == pytest.approx(2.0, abs=0.05)


def test_pcm_is_exact(tmp_path: Path) -> None:
    path = tmp_path / "exact.wav"
    write_sine(path, "pcm_f32le", 44100, 2, seconds=0.5)
    samples, *_ = read_all(path)
    np.testing.assert_allclose(samples, sine(0, samples.shape[1], 44100, 2), atol=1e-6)


def test_streams_in_pieces(tmp_path: Path) -> None:
    path = tmp_path / "ten_seconds.flac"
    write_sine(path, "flac", 48000, 2, seconds=10.0)
    with open_audio_file(path) as source:
        sizes = [block.num_samples for block in source]
    assert len(sizes) >= 10
    assert max(sizes) < 48000  # no block holds a whole second, let alone the file
    assert sum(sizes) == 480000


def test_memory_does_not_grow_with_duration(tmp_path: Path) -> None:
    path = tmp_path / "ten_minutes.wav"
    write_sine(path, "pcm_s16le", 16000, 1, seconds=600.0, pcm_step=16000)
    tracemalloc.start()
    try:
        total = sum(block.num_samples for block in open_audio_file(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert total == 600 * 16000
    assert peak < 2_000_000  # decoded as float32 the file is 38 MB


def test_attributes_and_path(tmp_path: Path) -> None:
    path = tmp_path / "attrs.wav"
    write_sine(path, "pcm_s16le", 16000, 2, seconds=0.1)
    source = open_audio_file(path)
    assert (source.sample_rate, source.channels, source.path) == (16000, 2, str(path))
    source.close()
    source.close()


def test_reads_once(tmp_path: Path) -> None:
    path = tmp_path / "once.wav"
    write_sine(path, "pcm_s16le", 16000, 1, seconds=0.1)
    source = open_audio_file(path)
    list(source)
    with pytest.raises(RuntimeError, match="already read"):
        iter(source)


def test_corrupt_data_mid_file(tmp_path: Path) -> None:
    path = tmp_path / "damaged.mp3"
    write_sine(path, "libmp3lame", 44100, 2, seconds=10.0)
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 5000] = np.random.default_rng(0).integers(0, 256, 5000, dtype=np.uint8).tobytes()
    path.write_bytes(bytes(data))

    source = open_audio_file(path)  # the start of the file is fine
    with pytest.raises(InputError, match=re.escape(f"audio {path} is damaged after")):
        list(source)
