"""An upscaler from an installed package (tests/plugins/colourbars' ``held-nearest``) runs after any family.

It holds frames back as a streaming super-resolution model does (nothing until
``lead`` frames are in, then 8 at a time, the rest at the run's end), so these
tests prove the loop's side of the seam: every frame comes out once, in
order, with exactly the audio it had without the upscaler, whether the final
stages run inline or on the overlap worker, and a run that ends mid-group
flushes what is held.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from avatarstream.cli.main import main
from avatarstream.errors import InputError
from avatarstream.families.assemble import build_pipeline
from avatarstream.families.registry import UPSCALERS, Upscale, load_family, registered
from avatarstream.publish.media import MediaChunk
from avatarstream.sources.pcm import PcmBlock
from families.test_plugin_strategy import render
from pipeline.test_resume import Saver
from publish.mp4_checks import decode
from sources.sine_files import write_sine

RATE = 16000
SPEECH = Path(__file__).resolve().parents[1] / "fixtures" / "liveavatar-tiny" / "cases" / "speech.wav"


def _speech(seconds: float) -> list[PcmBlock]:
    t = np.arange(int(seconds * RATE)) / RATE
    samples = (0.4 * np.sin(2 * np.pi * 220 * t) * (1 + np.sin(2 * np.pi * 3 * t))).astype(np.float32)[None]
    return [PcmBlock(samples[:, i : i + RATE // 5], RATE) for i in range(0, samples.shape[1], RATE // 5)]


def _run(model: str, seconds: float, *, overlap: bool, upscale: Upscale | None = None) -> list[MediaChunk]:
    family = load_family(model)
    if upscale is not None:
        family = upscale.load(family, device=torch.device("cpu"))
    pipeline = build_pipeline(family, torch.device("cpu"), overlap=overlap)
    return list(pipeline.stream(_speech(seconds), family.reference(None)))


def _joined(chunks: list[MediaChunk]) -> tuple[np.ndarray, np.ndarray]:
    expected = 0
    for chunk in chunks:
        assert chunk.first_frame == expected, "pieces follow each other on the timeline"
        expected += chunk.num_frames
    return np.concatenate([c.frames for c in chunks]), np.concatenate([c.audio for c in chunks], axis=1)


@pytest.mark.parametrize("overlap", [False, True])
@pytest.mark.parametrize("seconds", [3.3, 0.5])  # 0.5 s: fewer frames than the upscaler's lead, all given out at the end
def test_held_frames_come_out_once_in_order_with_their_own_audio(seconds: float, overlap: bool) -> None:
    plain_frames, plain_audio = _joined(_run("colourbars", seconds, overlap=overlap))
    held = _run("colourbars", seconds, overlap=overlap, upscale=Upscale("held-nearest", None, {"lead": 25, "scale": 2}))
    frames, audio = _joined(held)
    assert frames.shape == (plain_frames.shape[0], plain_frames.shape[1] * 2, plain_frames.shape[2] * 2, 3)
    np.testing.assert_array_equal(frames[:, ::2, ::2], plain_frames)
    np.testing.assert_array_equal(audio, plain_audio)
    if seconds > 1:  # the first piece waits for the lead, the later ones come 8 frames at a time
        assert held[0].num_frames >= 25 and all(c.num_frames % 8 == 0 for c in held[1:-1])


def test_bicubic_upscales_any_family_and_the_report_says_so(tmp_path: Path) -> None:
    chunks = _run("demo-tiny", 1.0, overlap=False, upscale=Upscale("bicubic", None, {"scale": 3}))
    plain = _run("demo-tiny", 1.0, overlap=False)
    frames, _ = _joined(chunks)
    reference, _ = _joined(plain)
    assert frames.shape == (reference.shape[0], reference.shape[1] * 3, reference.shape[2] * 3, 3)
    report = tmp_path / "report.json"
    args = ["render", "--model", "demo-tiny", "--audio", str(SPEECH), "--upscale", "bicubic", "--out", str(tmp_path / "o.mp4"), "--report", str(report)]
    assert main([*args, "--no-progress"]) == 0
    said = json.loads(report.read_text())
    assert said["settings"]["upscale"] == {"upscaler": "bicubic", "scale": 4}
    assert said["resolution"] == [reference.shape[2] * 4, reference.shape[1] * 4] and "upscaled by bicubic" in said["weights"]


def test_upscalers_are_listed_and_their_flags_come_with_upscale(capsys: pytest.CaptureFixture[str]) -> None:
    assert registered(UPSCALERS)["held-nearest"].origin == "avatarstream-colourbars"
    assert main(["families"]) == 0
    listing = capsys.readouterr().out
    assert "bicubic" in listing and "held-nearest  (from avatarstream-colourbars)" in listing
    with pytest.raises(SystemExit):
        main(["render", "--upscale", "held-nearest", "--help"])
    assert "--upscale-lead" in capsys.readouterr().out


def test_bad_upscale_arguments_are_one_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = str(tmp_path / "o.mp4")
    with pytest.raises(SystemExit):
        main(["render", "--upscale", "nope", "--out", out])
    assert "invalid choice: 'nope'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["render", "--upscale-lead", "4", "--out", out])
    assert "an option of the held-nearest upscaler: add --upscale NAME" in capsys.readouterr().err
    assert main(["render", "--upscale", "held-nearest", "--upscale-lead", "0", "--out", out]) != 0
    assert "--upscale-lead must be" in capsys.readouterr().err
    with pytest.raises(InputError, match="without an upscaler"):
        Upscale(None, tmp_path).check()


def test_a_session_that_saves_its_state_refuses_an_upscaler_that_holds_frames() -> None:
    family = Upscale("held-nearest").load(load_family("colourbars"), device=torch.device("cpu"))
    pipeline = build_pipeline(family, torch.device("cpu"))
    with pytest.raises(InputError, match="holds frames back"):
        list(pipeline.stream(_speech(0.5), family.reference(None), observers=[Saver()]))


def test_on_a_decode_rank_of_its_own_the_held_frames_are_flushed_to_rank_0(tmp_path: Path) -> None:
    """``--parallel decode``: the final stages, the holding upscaler last, run on rank 1; the run's end reaches it as a
    flush, and the video is the one process makes (gloo)."""
    speech = tmp_path / "speech.wav"
    write_sine(speech, "pcm_s16le", 16000, 1, 1.7)  # 42 frames: the upscaler holds 1 at the end (25 + 2 x 8)
    upscale = ("--upscale", "held-nearest", "--upscale-lead", "25")
    alone = render(speech, tmp_path / "one.mp4", tmp_path / "one.log", *upscale)
    assert alone.returncode == 0, alone.stderr[-2000:]
    split = render(speech, tmp_path / "two.mp4", tmp_path / "two.log", *upscale, "--nproc", "2", "--parallel", "decode")
    assert split.returncode == 0, split.stderr[-2000:]
    one, two = decode(tmp_path / "one.mp4"), decode(tmp_path / "two.mp4")
    assert len(two.frames) == len(one.frames) == 42
    np.testing.assert_array_equal(np.stack(two.frames), np.stack(one.frames))
    np.testing.assert_array_equal(two.audio, one.audio)
