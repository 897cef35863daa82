"""docs/deployment.md against the code: its download lines, layouts, memory figures, sizing table, predictions and the
FlashTalk conversion script."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import shlex
import shutil
from pathlib import Path

import huggingface_hub.cli.download as hf_download
import pytest
from huggingface_hub.cli.hf import app as hf_app
from huggingface_hub.utils import filter_repo_objects
from safetensors.torch import load_file, save_file

from avatarstream.errors import InputError
from avatarstream.families import sizing
from avatarstream.families.infinitetalk.layout import WeightsLayout
from avatarstream.families.infinitetalk.memory import NetworkBytes, loading_peak_gib, policy_table, real_weight_counts
from avatarstream.families.infinitetalk.presets import PRESETS, check_geometry
from avatarstream.families.infinitetalk.tiny import write_tiny_checkpoint
from avatarstream.families.liveavatar import memory as liveavatar_memory
from avatarstream.families.liveavatar.memory import kv_bytes, quantized_weight_bytes
from avatarstream.families.liveavatar.sequence_parallel import check_split
from avatarstream.families.registry import load_family, options_class
from avatarstream.models.infinitetalk.config import InfiniteTalkConfig
from avatarstream.models.infinitetalk.sampler import Guidance
from avatarstream.models.liveavatar.config import S2VConfig
from avatarstream.runtime.parallel.guidance import check_guidance_split
from avatarstream.runtime.parallel.layout import parse_parallel
from avatarstream.runtime.parallel.ulysses import check_heads
from avatarstream.runtime.policies import parse_residency
from avatarstream.weights.sizing import GIB, GPU_CLASSES, verdict

DOCS = Path(__file__).parents[1] / "docs"
PAGE = DOCS / "deployment.md"
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


def test_the_sizing_block_is_what_the_memory_models_print() -> None:
    start, end = "<!-- sizing: the output of python -m avatarstream.families.sizing", "<!-- /sizing -->"
    block = TEXT[TEXT.index(start) : TEXT.index(end)].split("\n", 1)[1].strip()
    assert block == sizing.markdown(), "the sizing block is out of date: paste the output of python -m avatarstream.families.sizing"
    prose = TEXT[TEXT.index(end) :].split("\n## ")[0]
    options = {(o.gpus, o.parallel, o.residency): o for o in sizing.configurations()[1].options}  # liveavatar at its preset size
    eighty = next(gpu for gpu in GPU_CLASSES if gpu.name == "80 GB")
    one = options[(1, "", "text_encoder=offloaded")]
    assert verdict(one, eighty) == "tight" and f"{eighty.capacity_gib - one.need_gib:.1f} GiB of the card is left" in prose
    assert verdict(options[(2, "sp=2", "default=resident")], eighty) == verdict(options[(4, "steps=4", "default=resident")], eighty) == "fits"
    assert f"The DiT alone is {liveavatar_memory.real_weight_counts().dit * 2 / GIB:.1f} GiB" in prose
    assert f"nor 80 × 10^9 bytes\n  ({80e9 / GIB:.1f} GiB)" in TEXT


def test_more_gpus_at_the_same_residency_hold_no_more_per_gpu() -> None:
    """What the page says of the options it does not name."""
    for configuration in sizing.configurations():
        several = [o for o in configuration.options if o.gpus > 1]
        for residency in {o.residency for o in several}:
            needs = [o.need_gib for o in sorted(several, key=lambda o: o.gpus) if o.residency == residency]
            assert needs == sorted(needs, reverse=True), (configuration.name, residency)


def _takes_flags(model: str, flags: str) -> None:
    """The model's own options in a sizing command parse and pass the family's checks."""
    parser = argparse.ArgumentParser(exit_on_error=False)
    options_class(model).add_arguments(parser.add_argument_group())
    options_class(model).from_namespace(parser.parse_args(shlex.split(flags)))


def test_every_sizing_option_is_a_layout_and_residency_the_model_takes(tiny_original: WeightsLayout, tiny_liveavatar: Path) -> None:
    configurations = sizing.configurations()
    modules = load_family("infinitetalk", tiny_original.base.parent).modules
    for option in (o for c in configurations if c.family == "infinitetalk" for o in c.options):  # every preset takes each layout
        assert all(_refusal(preset, option.gpus, option.parallel) is None for preset in PRESETS if option.parallel), option.command
        parse_residency(option.residency, modules)
        _takes_flags("infinitetalk", option.flags)
    heads, modules = S2VConfig.real().num_heads, load_family("liveavatar", tiny_liveavatar).modules
    for option in (o for c in configurations if c.family == "liveavatar" for o in c.options):
        layout = parse_parallel(option.parallel, option.gpus)
        assert layout.processes == option.gpus and layout.steps in (1, liveavatar_memory.PRESET.steps), option.command
        check_split(heads, layout.sp)
        parse_residency(option.residency, modules)
        _takes_flags("liveavatar", option.flags)


def test_quantized_ways_hold_less_and_shard_nothing() -> None:
    """Each quantized configuration holds less than bf16 for every command they share; quantized weights are never sharded."""
    configurations = sizing.configurations()
    plain = {(c.family, c.name, o.command): o.need_gib for c in configurations if c.weights == "bf16" for o in c.options}
    quantized = [(c, o) for c in configurations if c.weights != "bf16" for o in c.options]
    assert {c.weights for c, _ in quantized} >= {"int8 (DiT and UMT5)", "fp8 (DiT and umT5), fp8 KV caches"}
    for configuration, option in quantized:
        assert "sharded" not in option.residency and option.flags.startswith("--quantize "), option.command
        unquantized = option.command.replace(" " + option.flags, "")
        assert option.need_gib < plain[(configuration.family, configuration.name, unquantized)], option.command


def test_the_quantized_figures_the_page_quotes() -> None:
    prose = TEXT[TEXT.index("<!-- /sizing -->") :].split("\n## ")[0]
    options = {(c.family, c.weights, c.name, o.command): o.need_gib for c in sizing.configurations() for o in c.options}
    it, la = "`infinitetalk`, either preset", "`liveavatar` 704x384 (the preset)"
    resident = options[("infinitetalk", "int8 (DiT and UMT5)", it, "--residency default=resident --quantize int8")]
    streamed = options[("infinitetalk", "fp8 (DiT and UMT5)", it, "--residency dit=streamed:2 --quantize fp8")]
    assert f"({resident:.1f} GiB with `--quantize int8` or `fp8`)" in prose and f"streamed DiT ({streamed:.1f} GiB)" in prose
    it_dit = NetworkBytes.quantized(real_weight_counts(), "int8").dit / GIB
    assert f"Its DiT is {it_dit:.1f} GiB in int8 instead of {real_weight_counts().dit * 2 / GIB:.1f} GiB" in prose
    int8 = options[("liveavatar", "int8 (DiT and umT5), bf16 KV caches", la, "--residency default=resident --quantize int8")]
    fp8 = "--quantize fp8 --kv-cache-dtype fp8"
    fp8_weights = "fp8 (DiT and umT5), fp8 KV caches"
    resident_fp8 = options[("liveavatar", fp8_weights, la, f"--residency default=resident {fp8}")]
    offloaded_fp8 = options[("liveavatar", fp8_weights, la, f"--residency text_encoder=offloaded {fp8}")]
    assert f"({int8:.1f} GiB resident in int8, {resident_fp8:.1f} GiB in fp8" in prose and f"umT5 offloaded ({offloaded_fp8:.1f} GiB)" in prose
    config = S2VConfig.real()
    bf16_caches, fp8_caches = kv_bytes(config, (704, 384), 2)[0] / GIB, kv_bytes(config, (704, 384), 1, scaled=True)[0] / GIB
    assert f"{bf16_caches:.1f} GiB in bf16 and {fp8_caches:.1f} GiB in fp8" in prose
    assert f"the whole DiT ({quantized_weight_bytes('fp8')[0] / GIB:.1f} GiB in fp8)" in prose


def test_the_download_sizes_are_the_counts() -> None:
    counts = real_weight_counts()
    assert f"16.4 B parameters stored as float32: {counts.dit_base * 4 / GIB:.1f} GiB in 7 shards" in TEXT
    assert f"5.7 B parameters in bf16) is {counts.text_encoder * 2 / GIB:.1f} GiB" in TEXT
    la = liveavatar_memory.real_weight_counts()
    assert f"The DiT's {la.dit / 1e9:.1f} B parameters are {la.dit * 2 / GIB:.1f} GiB in bf16, umT5's 5.7 B {la.text_encoder * 2 / GIB:.1f} GiB" in TEXT
    demo = sum(f.stat().st_size for f in (PAGE.parents[1] / "src" / "avatarstream" / "assets" / "demo").iterdir())
    assert f"the weights ({demo / 2**20:.1f} MiB) ship" in TEXT


def _download_lines(text: str, family: str) -> list[str]:
    """The ``hf download`` lines of the bash block that downloads ``family`` and renders it from ROOT."""
    for code in re.findall(r"```bash\n(.*?)```", text, re.DOTALL):
        lines = [" ".join(line.split()) for line in code.replace("\\\n", " ").splitlines()]
        if any(line.startswith(f"avatarstream render --model {family} --weights ROOT ") for line in lines):
            downloads = [line for line in lines if line.startswith("hf download ")]
            if downloads:
                return downloads
    raise AssertionError(f"no block downloads {family} and renders it from ROOT")


class _Hub:
    """Stand-ins for Hugging Face repositories, (repository, revision) -> the folder of its files, that ``hf download``'s
    own code downloads from: the patterns are matched by huggingface_hub's ``filter_repo_objects``, as it does."""

    def __init__(self, repos: dict[tuple[str, str], Path]) -> None:
        self.repos = repos

    def _files(self, repo_id: str, revision: str | None) -> Path:
        return self.repos[(repo_id, revision or "main")]

    def snapshot_download(self, *, repo_id: str, revision: str | None, allow_patterns: list[str] | None, ignore_patterns: list[str] | None,
                          local_dir: str, **_: object) -> str:  # fmt: skip
        folder = self._files(repo_id, revision)
        names = [path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file()]
        for name in filter_repo_objects(names, allow_patterns=allow_patterns, ignore_patterns=ignore_patterns):
            (Path(local_dir) / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(folder / name, Path(local_dir) / name)
        return local_dir

    def hf_hub_download(self, *, repo_id: str, revision: str | None, filename: str, local_dir: str, **_: object) -> str:
        return self.snapshot_download(repo_id=repo_id, revision=revision, allow_patterns=[filename], ignore_patterns=None, local_dir=local_dir)


#: Files of the real repositories the loaders never read: the download lines must leave them behind.
UNREAD = ("README.md", "assets/demo.png", "wav2vec2-large-xlsr-53-english/pytorch_model.bin", "wav2vec2-large-xlsr-53-english/flax_model.msgpack",
          "wav2vec2-large-xlsr-53-english/language_model/lm.binary", "wav2vec2-large-xlsr-53-english/vocab.json")  # fmt: skip


def _stand_ins(family: str, tiny: Path, hub: Path) -> dict[tuple[str, str], Path]:
    """The repositories ``family``'s lines download, made from its tiny checkpoint (the adapter's, the LoRA's folder as is)."""
    if family == "infinitetalk":
        audio = tiny / "chinese-wav2vec2-base"
        for name in ("config.json", "preprocessor_config.json"):  # the main revision: the weights are in refs/pr/1 (as .bin in main)
            (hub / "wav2vec2").mkdir(parents=True, exist_ok=True)
            shutil.copy2(audio / name, hub / "wav2vec2" / name)
        (hub / "pr1").mkdir()
        shutil.copy2(audio / "model.safetensors", hub / "pr1" / "model.safetensors")
        return {
            ("Wan-AI/Wan2.1-I2V-14B-480P", "main"): tiny / "Wan2.1-I2V-14B-480P",
            ("MeiGen-AI/InfiniteTalk", "main"): tiny / "InfiniteTalk",
            ("TencentGameMate/chinese-wav2vec2-base", "main"): hub / "wav2vec2",
            ("TencentGameMate/chinese-wav2vec2-base", "refs/pr/1"): hub / "pr1",
        }
    if family == "flashhead":
        return _flashhead_stand_ins(tiny, hub)
    s2v = hub / "Wan2.2-S2V-14B"
    shutil.copytree(tiny / "Wan2.2-S2V-14B", s2v)
    for name in UNREAD:
        (s2v / name).parent.mkdir(parents=True, exist_ok=True)
        (s2v / name).write_bytes(b"not read")
    return {("Wan-AI/Wan2.2-S2V-14B", "main"): s2v, ("Quark-Vision/Live-Avatar", "main"): tiny / "LiveAvatar"}


def _flashhead_stand_ins(tiny: Path, hub: Path) -> dict[tuple[str, str], Path]:
    """SoulX-FlashHead-1_3B with Lite's files too (the lines take Pro's) and wav2vec2-base-960h with its other formats."""
    repo, audio = hub / "SoulX-FlashHead-1_3B", hub / "wav2vec2-base-960h"
    shutil.copytree(tiny / "SoulX-FlashHead-1_3B", repo)
    shutil.copytree(tiny / "wav2vec2-base-960h", audio)
    for name in FLASHHEAD_UNREAD:
        (hub / name).parent.mkdir(parents=True, exist_ok=True)
        (hub / name).write_bytes(b"not read")
    return {("Soul-AILab/SoulX-FlashHead-1_3B", "main"): repo, ("facebook/wav2vec2-base-960h", "main"): audio}


#: What the FlashHead lines must leave behind: the other variant's VAE, wav2vec2's other weight formats.
FLASHHEAD_UNREAD = ("SoulX-FlashHead-1_3B/Model_Lite/diffusion_pytorch_model.safetensors", "SoulX-FlashHead-1_3B/VAE_LTX/config.json", "SoulX-FlashHead-1_3B/README.md", "wav2vec2-base-960h/pytorch_model.bin",
                    "wav2vec2-base-960h/tf_model.h5")  # fmt: skip


@pytest.mark.parametrize("family", ["infinitetalk", "liveavatar", "flashhead"])
def test_the_download_lines_make_the_folder_the_loader_reads(
    family: str, request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fixture = {"infinitetalk": "tiny_original", "liveavatar": "tiny_liveavatar", "flashhead": "tiny_flashhead"}[family]
    found = request.getfixturevalue(fixture)
    tiny = found.base.parent if family == "infinitetalk" else found
    hub = _Hub(_stand_ins(family, tiny, tmp_path / "hub"))
    monkeypatch.setattr(hf_download, "snapshot_download", hub.snapshot_download)
    monkeypatch.setattr(hf_download, "hf_hub_download", hub.hf_hub_download)
    monkeypatch.chdir(tmp_path)
    lines = _download_lines(TEXT, family)
    for line in lines:  # through hf's own command parser (huggingface_hub as requirements/lock.txt pins it)
        hf_app(args=shlex.split(line)[1:], standalone_mode=False)
    capsys.readouterr()
    root = tmp_path / "ROOT"
    taken = (
        [name for name in FLASHHEAD_UNREAD if (root / name).exists()]
        if family == "flashhead"
        else [name for name in UNREAD if any(root.rglob(Path(name).name))]
    )
    assert not taken, f"the download lines take files the loader never reads: {taken}"
    load_family(family, root)  # the loader's own checks: every file where it looks, nothing missing
    page = DOCS / "models" / f"{family}.md"
    assert _download_lines(page.read_text(), family) == lines, f"{page.name} section 1 must give the same lines as deployment.md"


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
