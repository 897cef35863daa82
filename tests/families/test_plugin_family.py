"""A family from an installed package (tests/plugins/colourbars, registered by entry point) runs where a built-in one does.

Nothing outside its package names it: the registry finds it, the CLI derives
its flags from its options dataclass, the API validates them, and the loop
runs its block plan (no I-chunks) with the stage cache it resumes itself.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pytest
import torch

import avatarstream
from avatarstream.cli.main import main
from avatarstream.errors import InputError
from avatarstream.families.assemble import build_pipeline
from avatarstream.families.registry import load_family, registered
from avatarstream.sources.pcm import PcmBlock
from pipeline.test_resume import Saver
from publish.mp4_checks import decode
from sources.sine_files import write_sine

PLUGIN = "colourbars"
PACKAGE = Path(__file__).resolve().parents[1] / "plugins" / "colourbars"


def test_the_plugin_imports_only_the_public_plugin_api() -> None:
    """An outside family author writes against ``avatarstream.plugin`` alone."""
    imported = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module is not None:
                imported.add(node.module)
            elif isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
    ours = {name for name in imported if name == "avatarstream" or name.startswith("avatarstream.")}
    assert ours == {"avatarstream.plugin"}, sorted(ours)


def test_the_registry_lists_the_installed_family(capsys: pytest.CaptureFixture[str]) -> None:
    assert registered()[PLUGIN].origin == "avatarstream-colourbars"
    assert main(["families"]) == 0
    listing = capsys.readouterr().out
    assert f"{PLUGIN}  (from avatarstream-colourbars)" in listing and "colour bars that pulse with the audio" in listing
    assert "infinitetalk" in listing and "demo-tiny" in listing


def test_help_shows_a_familys_own_flags_only_when_it_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["render", "--model", PLUGIN, "--help"])
    named = capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["render", "--help"])
    plain = capsys.readouterr().out
    assert "--bars" in named and "colourbars options" in named and "--chunk-frames" not in named
    assert "--bars" not in plain and "--chunk-frames" not in plain and "--model NAME --help" in plain


def test_render_from_the_cli_with_its_own_option(tmp_path: Path) -> None:
    audio = tmp_path / "a.wav"
    write_sine(audio, "pcm_s16le", 16000, 1, 2.3)
    out, report = tmp_path / "bars.mp4", tmp_path / "r.json"
    assert main(["render", "--model", PLUGIN, "--bars", "3", "--audio", str(audio), "--out", str(out), "--report", str(report), "--no-progress"]) == 0
    figures = json.loads(report.read_text())
    video = decode(out)
    assert len(video.frames) == round(2.3 * 25) == figures["frames"]
    assert figures["settings"] == {"bars": 3, "block_frames": 12} and figures["model"] == PLUGIN
    assert {c["kind"] for c in figures["chunks"]} == {"B"}, "a block plan: no N/I chunks"


def test_bad_options_are_one_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", "--model", PLUGIN, "--bars", "40", "--out", str(tmp_path / "x.mp4")]) == 2
    assert "--bars must be between 1 and 16, got 40" in capsys.readouterr().err
    with pytest.raises(InputError, match="unknown model option chunk_frames; this model takes: bars"):
        avatarstream.render(out=tmp_path / "y.mp4", model=PLUGIN, model_options={"chunk_frames": 6})


def test_python_api_renders_and_the_same_seed_gives_the_same_frames(tmp_path: Path) -> None:
    runs = [avatarstream.render(out=tmp_path / f"{i}.mp4", model=PLUGIN, model_options={"bars": 5}, preset="ultrafast") for i in range(2)]
    assert all(r.complete for r in runs)
    first, second = (np.stack(decode(tmp_path / f"{i}.mp4").frames) for i in range(2))
    assert np.array_equal(first, second) and first.std() > 10, "bars, not a flat frame"


def test_its_stage_resumes_from_the_cache_it_declares(tmp_path: Path) -> None:
    family = load_family(PLUGIN)
    pipeline = build_pipeline(family, torch.device("cpu"))
    rate = pipeline.model_sample_rate
    t = np.arange(3 * rate) / rate
    speech = (0.3 * np.sin(2 * np.pi * 180 * t) * (t % 0.7 < 0.35)).astype(np.float32)
    reference = family.reference(None)
    keep = Saver()
    whole = [m.frames for m in pipeline.stream(_blocks(speech, rate), reference, observers=[keep])]
    state = keep.states[1]  # after the second block
    assert state.caches and all(v.numel() == 1 for v in state.caches.values()), "only the loudness the stage declared"
    resumed = [m.frames for m in pipeline.stream(_blocks(speech[state.audio.input_samples :], rate), reference, resume=state)]
    assert np.array_equal(np.concatenate(whole)[state.published_frames :], np.concatenate(resumed))
    assert state.published_frames == 2 * 12


def _blocks(samples: np.ndarray, rate: int) -> list[PcmBlock]:
    return [PcmBlock(samples[None, i : i + rate // 5], rate) for i in range(0, samples.size, rate // 5)]


def test_bench_loads_it_as_render_does(tmp_path: Path) -> None:
    assert main(["bench", "--model", PLUGIN, "--bars", "2", "--scenario", "speed", "--seconds", "2", "--repeats", "1", "--out", str(tmp_path)]) == 0
    result = json.loads((tmp_path / "speed.json").read_text())
    assert result["model"] == PLUGIN and result["frames"] == 50 and "bars" in result["stage_seconds"]
