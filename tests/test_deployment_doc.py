"""docs/deployment.md against the code: its layouts, memory figures, predictions and the FlashTalk conversion script."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
from pathlib import Path

import pytest
from safetensors.torch import load_file, save_file

from avatarstream.errors import InputError
from avatarstream.families.infinitetalk.memory import loading_peak_gib, policy_table, real_weight_counts
from avatarstream.families.infinitetalk.presets import PRESETS, check_geometry
from avatarstream.families.infinitetalk.tiny import write_tiny_checkpoint
from avatarstream.families.registry import load_family
from avatarstream.models.infinitetalk.config import InfiniteTalkConfig
from avatarstream.models.infinitetalk.sampler import Guidance
from avatarstream.runtime.parallel.guidance import check_guidance_split
from avatarstream.runtime.parallel.layout import parse_parallel
from avatarstream.runtime.parallel.ulysses import check_heads

PAGE = Path(__file__).parents[1] / "docs" / "deployment.md"
TEXT = PAGE.read_text()
PYTHON = re.findall(r"```python\n(.*?)```", TEXT, re.DOTALL)
COMMAND = re.compile(r"`--nproc (\d+) --parallel ([^`]+)`")


def _section(heading: str) -> str:
    """The page's text from the heading that contains ``heading`` to the next heading of any level."""
    start = TEXT.index(heading)
    end = re.search(r"\n#+ ", TEXT[start + 1 :])
    return TEXT[start : start + 1 + end.start()] if end else TEXT[start:]


def _block(marker: str) -> str:
    (code,) = [c for c in PYTHON if marker in c]
    return code


def _refusal(preset: str, nproc: int, text: str) -> str | None:
    """The runtime's own checks on a layout for the real 14B DiT and the preset; the first refusal, or None."""
    settings = PRESETS[preset]
    try:
        layout = parse_parallel(text, nproc)
        check_heads(InfiniteTalkConfig.real().dit.num_heads, layout.sp, "the DiT")
        check_guidance_split(len(Guidance(settings.text_guidance, settings.audio_guidance).predictions), layout.cfg)
        own, motion, _ = check_geometry(settings.chunk_frames, settings.motion_frames, settings.interp_frames)
        if own + motion < layout.sp:  # FrameShards' rule, checked at the first chunk
            raise InputError(f"a chunk of {own + motion} latent frames cannot be split over sp={layout.sp} ranks")
    except InputError as error:
        return str(error)
    return None


@pytest.fixture(scope="module")
def predictions() -> tuple[dict[str, list[str]], dict[str, object]]:
    """What the page's prediction block prints (table rows by preset) and its namespace."""
    namespace: dict[str, object] = {"__name__": "deployment_doc"}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(_block("SUSTAINED_FLOPS"), str(PAGE), "exec"), namespace)  # noqa: S102 - the page's own example
    rows: dict[str, list[str]] = {}
    preset = ""
    for line in out.getvalue().splitlines():
        if line.endswith(":"):
            preset = line[:-1]
        else:
            rows.setdefault(preset, []).append(line)
    return rows, namespace


def test_the_prediction_block_describes_the_real_presets_and_model(predictions: tuple[dict[str, list[str]], dict[str, object]]) -> None:
    _, namespace = predictions
    dit = InfiniteTalkConfig.real().dit
    assert (namespace["DIM"], namespace["FFN"], namespace["LAYERS"], namespace["HEADS"]) == (dit.dim, dit.ffn_dim, dit.num_layers, dit.num_heads)
    described = namespace["PRESETS"]
    assert isinstance(described, dict) and set(described) == set(PRESETS)
    for name, (frames, new, steps, predictions_per_step, size) in described.items():
        preset = PRESETS[name]
        own, motion, _ = check_geometry(preset.chunk_frames, preset.motion_frames, preset.interp_frames)
        guidance = Guidance(preset.text_guidance, preset.audio_guidance)
        assert (frames, new, steps, predictions_per_step, size) == (own + motion, own * 4, preset.steps, len(guidance.predictions), preset.size), name


def test_the_prediction_tables_are_what_the_block_prints(predictions: tuple[dict[str, list[str]], dict[str, object]]) -> None:
    rows, _ = predictions
    for preset in PRESETS:
        table = [line for line in _section(f"PREDICTED: `--model-preset {preset}`").splitlines() if line.startswith("| ") and "`" in line]
        assert table == rows[preset], f"the {preset} table is not what the block prints; paste its output"


def test_every_listed_layout_is_accepted_and_every_refused_one_refused(predictions: tuple[dict[str, list[str]], dict[str, object]]) -> None:
    rows, _ = predictions
    for preset in PRESETS:
        listed = [COMMAND.search(row) for row in rows[preset]]
        for found in filter(None, listed):
            assert _refusal(preset, int(found[1]), found[2]) is None, f"{preset}: {found[0]} is listed but refused"
        counts = {int(found[1]) for found in filter(None, listed)}
        assert {2, 4, 8} <= counts, f"{preset}: the page must cover 2, 4 and 8 GPUs"
    refused = _section("PREDICTED: `--model-preset flashtalk`").partition("**Refused**")[2]
    commands = COMMAND.findall(refused)
    assert len(commands) >= 5
    for nproc, text in commands:
        assert _refusal("flashtalk", int(nproc), text) is not None, f"flashtalk: --nproc {nproc} --parallel {text} is said to be refused but is accepted"
    assert _refusal("flashtalk", 8, "sp=4,cfg=2") is not None and _refusal("infinitetalk", 8, "sp=4,cfg=2") is None


def test_the_memory_figures_are_what_memory_py_computes() -> None:
    counts = real_weight_counts()
    expected = {name: (device, host) for gpus in (2, 4, 5, 8) for name, device, host in policy_table(counts, 2, gpus=gpus)}
    table = [line for line in _section("## 2. GPU memory").splitlines() if line.startswith("| ") and "GiB" in line]
    assert len(table) >= 6
    for line in table:
        name, _, device, host = (cell.strip() for cell in line.strip("|").split("|"))
        assert name in expected, f"{name!r} is not a policy memory.py computes"
        assert (device, host) == tuple(f"{value:.1f} GiB" for value in expected[name]), name
    peak = loading_peak_gib(counts, 2)
    assert f"{peak:.1f} GiB of host memory per process" in TEXT and f"about {8 * peak:.0f} GiB" in TEXT
    streamed = counts.dit * 2 / 2**30
    assert f"copies its {streamed:.1f} GiB" in TEXT and f"{4 * streamed:.0f} GiB" in TEXT


def _flashtalk_stand_in(tiny: Path, download: Path) -> Path:
    """A tiny checkpoint laid out as SoulX-FlashTalk-14B is: Wan's files in one folder, the adapter merged into the DiT's
    shards (here the last one, which it returns)."""
    shutil.copytree(tiny / "Wan2.1-I2V-14B-480P", download)
    index_path = download / "diffusion_pytorch_model.safetensors.index.json"
    index = json.loads(index_path.read_text())
    last = max(set(index["weight_map"].values()))
    merged = {**load_file(download / last), **load_file(tiny / "InfiniteTalk" / "single" / "infinitetalk.safetensors")}
    save_file(merged, str(download / last))
    index["weight_map"].update(dict.fromkeys(merged, last))
    index_path.write_text(json.dumps(index))
    return download / last


def test_the_flashtalk_download_needs_the_conversion_and_the_script_makes_it_load(tmp_path: Path) -> None:
    tiny, download, root = tmp_path / "tiny", tmp_path / "models" / "SoulX-FlashTalk-14B", tmp_path / "ROOT"
    written = write_tiny_checkpoint(tiny, "original", seed=0, shards=2)
    merged_shard = _flashtalk_stand_in(tiny, download)
    shutil.copytree(written.audio_encoder, root / "chinese-wav2vec2-base")

    as_downloaded = [  # what the page says happens without the conversion
        ({"weights": download.parent}, "no Wan base model"),
        ({"base": download, "adapter": merged_shard, "audio_encoder": root / "chinese-wav2vec2-base"}, "unexpected tensors ['blocks.0.audio_attn2"),
    ]
    for given, message in as_downloaded:
        weights = given.pop("weights", None)
        with pytest.raises(InputError, match=re.escape(message)):
            load_family("infinitetalk", weights, given)

    code = _block("is_adapter_key")
    for placeholder, path in (('Path("models/SoulX-FlashTalk-14B")', download), ('Path("ROOT")', root)):
        assert code.count(placeholder) == 1, f"the conversion script no longer names {placeholder}; update this test"
        code = code.replace(placeholder, f"Path({str(path)!r})")
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(code, str(PAGE), "exec"), {"__name__": "deployment_doc"})  # noqa: S102 - the page's own example

    converted, original = load_family("infinitetalk", root), load_family("infinitetalk", tiny)
    ours, theirs = converted.networks.dit.state_dict(), original.networks.dit.state_dict()
    assert ours.keys() == theirs.keys()
    assert all(ours[k].equal(theirs[k]) for k in ours), "the converted checkpoint's DiT differs from the unmerged one's"
    assert (root / "Wan2.1-I2V-14B-480P" / "Wan2.1_VAE.pth").is_file() and (root / "Wan2.1-I2V-14B-480P" / "google" / "umt5-xxl").is_dir()
