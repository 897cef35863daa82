"""The bad-input corpus as data: one row per case, with the surface it enters by and the answer it must get.

``make(tmp)`` builds the input under a fresh folder: for ``cli`` the argv after ``avatarstream``; for ``api`` the keyword
arguments of ``avatarstream.render``; for ``http`` a ``Request``; for ``ws`` a ``Socket``. ``expect`` is the exit code
(cli, api: ``InputError.exit_code``), the HTTP status, or for a socket the handshake's status (0: the socket opens and
answers an ``error`` event). ``words`` must all be in the one-line message. ``accepted`` rows are borderline inputs that
work (what we decided users expect); they are kept to pin the decision and are not counted as errors.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import makers as mk
import numpy as np

from avatarstream.sources.pcm import PcmBlock

TINY = ("--model", "demo-tiny", "--no-progress")
Part = str | Callable[[Path], object]


@dataclass(frozen=True)
class Case:
    id: str
    surface: str  # cli | api | http | ws
    make: Callable[[Path], Any]
    expect: int
    words: tuple[str, ...]
    accepted: bool = False


@dataclass(frozen=True)
class Request:
    """An HTTP request; ``{sid}`` in the path is a running session, ``{closed}`` a closed one's id."""

    method: str
    path: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    token: str | None = "good"  # "good", None (no header) or a wrong token


@dataclass(frozen=True)
class Socket:
    """An audio WebSocket: its session (``{sid}`` / ``{closed}`` / ``{busy}``, one whose socket is open / a made-up id),
    query, token, and messages to send."""

    sid: str = "{sid}"
    query: str = "format=s16le&rate=16000&channels=1"
    token: str | None = "good"
    send: tuple[bytes | str, ...] = ()


def _resolve(part: Part, tmp: Path) -> str:
    return str(part(tmp)) if callable(part) else part


def render(*parts: Part) -> Callable[[Path], list[str]]:
    """``avatarstream render`` on demo-tiny; a good clip as --audio and tmp/o.mp4 as --out unless the row gives its own."""

    def make(tmp: Path) -> list[str]:
        args = [_resolve(p, tmp) for p in parts]
        audio = [] if "--audio" in args else ["--audio", str(mk.good_wav(tmp))]
        out = [] if "--out" in args else ["--out", str(tmp / "o.mp4")]
        return ["render", *TINY, *audio, *out, *args]

    return make


def serve(*parts: Part) -> Callable[[Path], list[str]]:
    return lambda tmp: ["serve", "--model", "demo-tiny", *(_resolve(p, tmp) for p in parts)]


def audio(maker: Callable[[Path], Path]) -> Callable[[Path], list[str]]:
    return render("--audio", maker)


def reference(maker: Callable[[Path], Path]) -> Callable[[Path], list[str]]:
    return render("--reference", maker)


def weights(*edits: Callable[[Path], object], model: str = "demo") -> Callable[[Path], list[str]]:
    """--model demo --weights FOLDER: a complete demo-tiny folder, then ``edits`` applied to it."""

    def folder(tmp: Path) -> Path:
        path = mk.demo_weights(tmp)
        for edit in edits:
            edit(path)
        return path

    return render("--model", model, "--weights", folder)


def infinitetalk(*edits: Callable[[Path], object]) -> Callable[[Path], list[str]]:
    """--model infinitetalk --weights ROOT: the golden set's tiny checkpoint, then ``edits`` applied to it."""

    def folder(tmp: Path) -> Path:
        root = mk.infinitetalk_weights(tmp)
        for edit in edits:
            edit(root)
        return root

    return render("--model", "infinitetalk", "--weights", folder)


def infinitetalk_diffusers(*edits: Callable[[Path], object]) -> Callable[[Path], list[str]]:
    """--model infinitetalk --weights ROOT: a random tiny checkpoint in the Diffusers layout, then ``edits`` applied to it."""

    def folder(tmp: Path) -> Path:
        from avatarstream.families.infinitetalk.tiny import write_tiny_checkpoint

        root = tmp / "infinitetalk-diffusers"
        write_tiny_checkpoint(root, "diffusers", seed=3)
        for edit in edits:
            edit(root)
        return root

    return render("--model", "infinitetalk", "--weights", folder)


def liveavatar(*edits: Callable[[Path], object]) -> Callable[[Path], list[str]]:
    """--model liveavatar --weights ROOT: a random tiny LiveAvatar checkpoint, then ``edits`` applied to it."""

    def folder(tmp: Path) -> Path:
        from avatarstream.families.liveavatar.tiny import write_tiny_checkpoint

        root = tmp / "liveavatar"
        write_tiny_checkpoint(root, seed=5)
        for edit in edits:
            edit(root)
        return root

    return render("--model", "liveavatar", "--weights", folder)


def parity(*edits: Callable[[Path], object]) -> Callable[[Path], list[str]]:
    """``avatarstream parity DIR`` on a copy of the tiny golden set with ``edits`` applied."""

    def make(tmp: Path) -> list[str]:
        root = mk.golden_set(tmp)
        for edit in edits:
            edit(root)
        return ["parity", str(root)]

    return make


BASE = "Wan2.1-I2V-14B-480P"
dit_config = lambda **changes: lambda r: mk.edit_json(r / BASE / "config.json", **changes)
w2v_config = lambda **changes: lambda r: mk.edit_json(r / "chinese-wav2vec2-base" / "config.json", **changes)
dit_index = lambda **changes: lambda r: mk.edit_json(r / BASE / "diffusion_pytorch_model.safetensors.index.json", **changes)
BASE_DIFFUSERS = BASE + "-Diffusers"
umt5_config = lambda **changes: lambda r: mk.edit_json(r / BASE_DIFFUSERS / "text_encoder" / "config.json", **changes)
clip_config = lambda **changes: lambda r: mk.edit_json(r / BASE_DIFFUSERS / "image_encoder" / "config.json", **changes)
s2v_config = lambda **changes: lambda r: mk.edit_json(r / "Wan2.2-S2V-14B" / "config.json", **changes)
golden_spec = lambda edit: lambda r: (r / "golden.json").write_text(json.dumps(edit(json.loads((r / "golden.json").read_text()))))
DIT_RANGE = ("Wan2.1-I2V-14B-480P/config.json", "expected a whole number in")
TOO_BIG = ("config.json describes", "GiB", "cannot be loaded", "damaged or belongs to another model")


def _scalar() -> object:
    import torch

    return torch.tensor(1.0)


def busy_port() -> int:
    """A port something listens on for as long as the test process lives."""
    import socket

    if not hasattr(busy_port, "socket"):
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        busy_port.socket = sock  # type: ignore[attr-defined]
    return busy_port.socket.getsockname()[1]  # type: ignore[attr-defined]


def blocks(*items: PcmBlock) -> Callable[[Path], dict[str, Any]]:
    return lambda tmp: {"audio": list(items)}


def _codec_tag(tag: int) -> bytes:
    """A 16-bit WAV whose format tag names a codec no decoder takes."""
    data = mk.wav_bytes(mk.tone())
    return data[:20] + tag.to_bytes(2, "little") + data[22:]


def _with_list(info: bytes, claim: int | None = None) -> bytes:
    """A 16-bit WAV with a LIST INFO chunk holding ``info`` before its samples; ``claim``: the size its header says."""
    import struct

    data = mk.wav_bytes(mk.tone())
    at = data.index(b"data")
    out = data[:at] + b"LIST" + struct.pack("<I", len(info) + 4 if claim is None else claim) + b"INFO" + info + data[at:]
    return out[:4] + struct.pack("<I", len(out) - 8) + out[8:]


LIST_4GIB = _with_list(b"ISFT\x00\x00\x00\x40ok", claim=0xFFFFFFFF)  # its entry claims 1 GiB: FFmpeg allocated that much
NOT_UTF8_TAG = _with_list(b"ISFT\x04\x00\x00\x00ok\xb1!")


def _tiff_offsets_as_text(tmp: Path) -> Path:
    """A TIFF whose strip offsets are typed as text (ASCII), not as a number."""
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (40, 36)).save(buffer, format="TIFF")
    data = buffer.getvalue()
    at = data.index(b"\x11\x01\x04\x00\x01\x00\x00\x00")  # StripOffsets: one LONG
    return mk.write(tmp, "face.tif", data[: at + 2] + b"\x02\x00" + data[at + 4 :])


def _bad_pickle(path: Path) -> None:
    """Rewrite the torch checkpoint at ``path`` with a pickle that stops on an empty stack (its tensors left as they are)."""
    import io
    import zipfile

    source = zipfile.ZipFile(io.BytesIO(path.read_bytes()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        for name in source.namelist():
            archive.writestr(name, b"\x80\x02." if name.endswith("/data.pkl") else source.read(name))
    path.write_bytes(out.getvalue())


AUDIO_WORDS = ("cannot read audio", "use a WAV, MP3, FLAC or OGG file")
RATE_WORDS = ("sample rate is", "use 4000..384000 Hz")
NAN_WORDS = ("holds NaN or infinite samples", "re-export")
nan_wav = lambda t: mk.float_wav_with(t, float("nan"))
inf_wav = lambda t: mk.float_wav_with(t, float("-inf"))

CLI: list[Case] = [
    # -- audio -----------------------------------------------------------------------------------
    Case("audio-missing", "cli", render("--audio", lambda t: t / "nope.wav"), 2, ("audio file not found", "nope.wav")),
    Case("audio-empty-file", "cli", audio(mk.empty_file), 2, AUDIO_WORDS),
    Case("audio-wav-header-cut", "cli", audio(mk.wav_header_cut), 2, AUDIO_WORDS),
    Case("audio-flac-header-cut", "cli", audio(mk.flac_header_cut), 2, AUDIO_WORDS),
    Case("audio-text-named-wav", "cli", audio(mk.text_as_wav), 2, AUDIO_WORDS),
    Case("audio-random-bytes", "cli", audio(mk.random_bytes), 2, AUDIO_WORDS),
    Case("audio-zero-length", "cli", audio(mk.zero_length_wav), 2, ("has zero length",)),
    Case("audio-nan-samples", "cli", audio(nan_wav), 2, NAN_WORDS),
    Case("audio-inf-samples", "cli", audio(inf_wav), 2, NAN_WORDS),
    Case("audio-rate-1hz", "cli", audio(lambda t: mk.wav_rate(t, 1)), 2, ("1 Hz", *RATE_WORDS)),
    Case("audio-rate-10mhz", "cli", audio(lambda t: mk.wav_rate(t, 10_000_000)), 2, ("10000000 Hz", *RATE_WORDS)),
    Case("audio-a-folder", "cli", audio(mk.directory), 2, ("cannot read audio", "Is a directory")),
    Case("audio-an-image", "cli", audio(mk.png_file), 2, ("has no audio stream", "use a WAV, MP3, FLAC or OGG file")),
    Case(
        "audio-wav-no-decoder", "cli", audio(lambda t: mk.write(t, "odd.wav", _codec_tag(0x1234))), 2, ("no decoder for its audio codec", *AUDIO_WORDS)
    ),  # fuzzer
    Case(
        "audio-wav-list-claims-4gib", "cli", audio(lambda t: mk.write(t, "list.wav", LIST_4GIB)), 2, ("'LIST' chunk claims 4294967295 bytes", *AUDIO_WORDS)
    ),  # fuzzer
    Case("audio-wav-tag-not-utf8", "cli", audio(lambda t: mk.write(t, "tag.wav", NOT_UTF8_TAG)), 0, (), accepted=True),  # fuzzer: a traceback before
    Case("audio-wav-data-cut", "cli", audio(mk.wav_data_cut), 0, (), accepted=True),  # the half that is there plays, as in any player
    Case("audio-header-claims-10h", "cli", audio(mk.wav_claims_hours), 0, (), accepted=True),  # the tiny real length renders; nothing sized by the claim
    Case("audio-8-channels", "cli", audio(lambda t: mk.wav_channels(t, 8)), 0, (), accepted=True),  # downmixed to mono
    Case("audio-wav-named-txt", "cli", audio(lambda t: mk.good_wav(t, "speech.txt")), 0, (), accepted=True),  # content decides
    # -- reference images --------------------------------------------------------------------------
    Case("ref-missing", "cli", render("--reference", lambda t: t / "nope.png"), 2, ("reference image not found", "nope.png")),
    Case(
        "ref-text-named-png", "cli", reference(lambda t: mk.write(t, "face.png", b"not a picture")), 2, ("cannot read reference", "not an image", "PNG or JPEG")
    ),
    Case("ref-wav-named-png", "cli", reference(lambda t: mk.good_wav(t, "face.png")), 2, ("cannot read reference", "not an image", "PNG or JPEG")),
    Case("ref-png-text-bomb", "cli", reference(mk.png_text_bomb), 2, ("cannot read reference", "Decompressed data too large", "PNG or JPEG")),
    Case("ref-png-cut", "cli", reference(mk.png_cut), 2, ("cannot read reference", "truncated", "PNG or JPEG")),
    Case("ref-1x1", "cli", reference(mk.png_tiny), 2, ("1x1 pixels", "too small to show a face", "at least 32x32")),
    Case("ref-decompression-bomb", "cli", reference(mk.png_bomb), 2, ("cannot read reference", "decompression bomb", "scale it down")),
    Case("ref-a-folder", "cli", reference(mk.directory), 2, ("cannot read reference", "Is a directory")),
    Case("ref-and-avatar", "cli", render("--avatar", "1", "--reference", mk.png_file), 2, ("either --reference IMAGE or --avatar SEED, not both",)),
    Case("ref-avatar-negative", "cli", render("--avatar", "-1"), 2, ("--avatar must be at least 0, got -1",)),
    Case(
        "ref-tiff-offsets-as-text", "cli", reference(_tiff_offsets_as_text), 2, ("cannot read reference", "cannot be interpreted as an integer", "PNG or JPEG")
    ),
    Case("ref-cmyk-jpeg", "cli", reference(mk.cmyk_jpeg), 0, (), accepted=True),  # converted to RGB
    Case("ref-animated-gif", "cli", reference(mk.animated_gif), 0, (), accepted=True),  # its first frame
    Case("ref-png-named-txt", "cli", reference(lambda t: mk.png_file(t, "face.txt")), 0, (), accepted=True),  # content decides
    # -- weights -----------------------------------------------------------------------------------
    Case("weights-missing", "cli", render("--model", "demo", "--weights", lambda t: t / "nope"), 2, ("weights folder", "not found", "config.json")),
    Case("weights-a-file", "cli", render("--model", "demo", "--weights", mk.good_wav), 2, ("is a file, not a folder",)),
    Case("weights-no-config", "cli", weights(lambda f: (f / "config.json").unlink()), 2, ("no config.json in weights folder",)),
    Case("weights-config-not-json", "cli", weights(lambda f: (f / "config.json").write_text("{fps:")), 2, ("invalid", "config.json", "Expecting")),
    Case("weights-config-version-2", "cli", weights(lambda f: mk.edit_config(f, format_version=2)), 2, ("format version 2", "reads version 1")),
    Case(
        "weights-config-heads-0",
        "cli",
        weights(lambda f: mk.edit_config(f, dit__heads=0)),
        2,
        ("config.json", "dit: dim (32) must be a positive multiple of heads (0)"),
    ),
    Case("weights-config-fps-negative", "cli", weights(lambda f: mk.edit_config(f, fps=-25)), 2, ("config.json", "fps and sample_rate must be positive")),
    Case("weights-config-wrong-type", "cli", weights(lambda f: mk.edit_config(f, fps="fast")), 2, ("config.json", "DemoConfig.fps: expected int, got 'fast'")),
    Case("weights-config-unknown-key", "cli", weights(lambda f: mk.edit_config(f, colour="blue")), 2, ("unknown config keys ['colour']",)),
    Case("weights-wrong-shapes", "cli", weights(lambda f: mk.edit_config(f, dit__dim=64)), 2, ("do not fit module", "wrong shape", "same model config")),
    Case("weights-missing-tensor", "cli", weights(mk.drop_tensor), 2, ("vae.safetensors do not fit module 'vae'", "missing ['")),
    Case("weights-missing-module", "cli", weights(lambda f: (f / "vae.safetensors").unlink()), 2, ("weights for 'vae' not found",)),
    Case(
        "weights-pickle-as-safetensors", "cli", weights(mk.pickle_as_safetensors), 2, ("cannot read weights", "vae.safetensors", "expected a .safetensors file")
    ),
    Case("weights-truncated", "cli", weights(lambda f: mk.truncate(f / "a2v_dit.safetensors")), 2, ("cannot read weights", "a2v_dit.safetensors")),
    Case("weights-empty-file", "cli", weights(lambda f: (f / "sr_dit.safetensors").write_bytes(b"")), 2, ("cannot read weights", "sr_dit.safetensors")),
    Case("weights-module-linked-outside", "cli", weights(mk.link_outside), 2, ("vae.safetensors leads to", "outside the weights folder")),
    Case("weights-integer-tensor", "cli", weights(mk.integer_tensor), 2, ("vae.safetensors", "torch.int32", "expects a floating-point weight")),
    Case(
        "weights-infinitetalk-to-demo",
        "cli",
        render("--model", "demo", "--weights", mk.infinitetalk_like),
        2,
        ("holds InfiniteTalk downloads", "--model infinitetalk"),
    ),
    Case("weights-demo-to-infinitetalk", "cli", weights(model="infinitetalk"), 2, ("no Wan base model in", "Wan2.1-I2V-14B-480P")),
    Case("weights-infinitetalk-none", "cli", render("--model", "infinitetalk"), 2, ("the infinitetalk model needs --weights ROOT",)),
    Case("weights-demo-too-big-for-memory", "cli", weights(lambda f: mk.edit_config(f, dit__dim=131072, dit__heads=1024, dit__layers=64)), 2, TOO_BIG),
    Case(
        "weights-demo-layers-million", "cli", weights(lambda f: mk.edit_config(f, dit__layers=10**6)), 2, ("DiTConfig.layers (1000000) must be at most 1024",)
    ),
    Case("weights-demo-vae-groups-0", "cli", weights(lambda f: mk.edit_config(f, vae__groups=0)), 2, ("vae.groups (0) must be >= 1",)),  # found by the fuzzer
    Case("weights-demo-patch-0", "cli", weights(lambda f: mk.edit_config(f, sr__patch_size=0)), 2, ("patch_size must be >= 1",)),  # found by the fuzzer
    Case(
        "weights-demo-decoder-channels-negative",  # found by `make fuzz`: torch's RuntimeError building it on meta
        "cli",
        weights(lambda f: mk.edit_config(f, vae__decoder_channels=-16)),
        2,
        ("config.json", "cannot be built", "negative dimension -16"),
    ),
    Case("weights-demo-mlp-ratio-infinite", "cli", weights(lambda f: mk.edit_config(f, dit__mlp_ratio=1e999)), 2, ("DiTConfig.mlp_ratio (inf)", "finite")),
    Case("weights-it-heads-0", "cli", infinitetalk(dit_config(num_heads=0)), 2, ("num_heads is 0", *DIT_RANGE)),
    Case("weights-it-dim-0", "cli", infinitetalk(dit_config(dim=0)), 2, ("dim is 0", *DIT_RANGE)),
    Case("weights-it-dim-infinite", "cli", infinitetalk(dit_config(dim=1e999)), 2, ("dim is inf", *DIT_RANGE)),
    Case("weights-it-dim-billion", "cli", infinitetalk(dit_config(dim=10**9, num_heads=8)), 2, ("dim is 1000000000", *DIT_RANGE)),
    Case("weights-it-layers-million", "cli", infinitetalk(dit_config(num_layers=10**6)), 2, ("num_layers is 1000000", *DIT_RANGE)),
    Case("weights-it-layers-a-string", "cli", infinitetalk(dit_config(num_layers="40")), 2, ("num_layers is '40'", *DIT_RANGE)),
    Case("weights-it-eps-a-list", "cli", infinitetalk(dit_config(eps=[1e-6])), 2, ("eps is [1e-06]", "a finite number")),
    Case(
        "weights-it-too-big-for-memory",
        "cli",
        infinitetalk(dit_config(dim=131072, num_heads=1024, ffn_dim=131072, num_layers=1024)),
        2,
        TOO_BIG,
    ),
    Case("weights-it-config-a-list", "cli", infinitetalk(lambda r: (r / BASE / "config.json").write_text("[]")), 2, ("is not the config of a Wan model",)),
    Case("weights-it-index-map-a-list", "cli", infinitetalk(dit_index(weight_map=["a"])), 2, ("'weight_map' that is a list",)),
    Case("weights-it-shard-name-a-number", "cli", infinitetalk(dit_index(weight_map={"blocks.0.ffn.0.weight": 3})), 2, ("names shard 3, not a file name",)),
    Case(
        "weights-it-wav2vec2-a-list", "cli", infinitetalk(lambda r: (r / "chinese-wav2vec2-base" / "config.json").write_text("[]")), 2, ("holds a JSON list",)
    ),
    Case("weights-it-wav2vec2-heads-a-string", "cli", infinitetalk(w2v_config(num_attention_heads="x")), 2, ("num_attention_heads is 'x'",)),
    Case("weights-it-wav2vec2-layers-million", "cli", infinitetalk(w2v_config(num_hidden_layers=10**6)), 2, ("num_hidden_layers is 1000000",)),
    Case(
        "weights-it-adapter-scalar",
        "cli",
        infinitetalk(lambda r: mk.replace_tensor(r / "InfiniteTalk" / "single" / "infinitetalk.safetensors", "audio_proj.proj3.weight", _scalar())),
        2,
        ("infinitetalk.safetensors has no audio projection", "expected shapes"),
    ),
    # found by `make fuzz` (docs/fuzzing.md): a traceback before, one line now
    Case("weights-it-head-dim-odd", "cli", infinitetalk(dit_config(dim=68)), 2, ("dim / num_heads is 17", "an even number", *DIT_RANGE[:1])),
    Case(
        "weights-it-vae-pickle-cut",
        "cli",
        infinitetalk(lambda r: _bad_pickle(r / BASE / "Wan2.1_VAE.pth")),
        2,
        ("cannot read", "Wan2.1_VAE.pth weights-only: pop from empty list", "holds only tensors"),
    ),
    Case(
        "weights-it-index-shard-name-newline",
        "cli",
        infinitetalk(dit_index(weight_map={"blocks.0.ffn.0.weight": "a\nb.safetensors"})),
        2,
        ("names shard 'a\\nb.safetensors', not a file name",),
    ),
    Case("weights-it-wav2vec2-dropout-5", "cli", infinitetalk(w2v_config(activation_dropout=5.1)), 2, ("cannot be built", "dropout probability", "5.1")),
    Case("weights-it-wav2vec2-norm-unknown", "cli", infinitetalk(w2v_config(feat_extract_norm="batch")), 2, ("cannot be built", "feat_extract_norm")),
    Case("weights-itd-umt5-dtype-unknown", "cli", infinitetalk_diffusers(umt5_config(dtype="float99")), 2, ("text_encoder/config.json", "float99")),
    Case("weights-itd-umt5-flag-a-number", "cli", infinitetalk_diffusers(umt5_config(is_encoder_decoder=1e-6)), 2, ("is_encoder_decoder", "expected bool")),
    Case("weights-itd-umt5-dropout-5", "cli", infinitetalk_diffusers(umt5_config(dropout_rate=5.1)), 2, ("text_encoder/config.json", "cannot be built")),
    Case("weights-itd-umt5-activation-unknown", "cli", infinitetalk_diffusers(umt5_config(dense_act_fn="gelu_nope")), 2, ("text_encoder/config.json",)),
    Case("weights-itd-umt5-layers-million", "cli", infinitetalk_diffusers(umt5_config(num_layers=10**6)), 2, ("num_layers is 1000000", "1..1024")),  # by hand
    Case("weights-itd-clip-activation-unknown", "cli", infinitetalk_diffusers(clip_config(hidden_act="gelu_nope")), 2, ("image_encoder/config.json",)),
    Case("weights-itd-clip-dtype-unknown", "cli", infinitetalk_diffusers(clip_config(dtype="&float16")), 2, ("image_encoder/config.json", "&float16")),
    Case("weights-la-heads-0", "cli", liveavatar(s2v_config(num_heads=0)), 2, ("Wan2.2-S2V-14B/config.json", "num_heads is 0")),
    Case("weights-la-layers-huge", "cli", liveavatar(s2v_config(num_layers=3 * 10**61)), 2, ("num_layers is 3000", "1..1024")),
    Case("weights-la-dim-negative", "cli", liveavatar(s2v_config(ffn_dim=-4)), 2, ("ffn_dim is -4",)),
    Case("weights-la-dim-infinite", "cli", liveavatar(s2v_config(dim=1e999)), 2, ("dim is inf",)),
    # -- golden sets (parity) ------------------------------------------------------------------------
    Case("golden-json-a-list", "cli", parity(lambda r: (r / "golden.json").write_text("[1]")), 2, ("golden.json holds a JSON list",)),
    Case("golden-case-missing-file", "cli", parity(golden_spec(lambda s: {**s, "cases": {"dit": {}}})), 2, ("case 'dit' has no 'file'",)),
    Case(
        "golden-tensor-wrong-shape",
        "cli",
        parity(lambda r: mk.replace_tensor(r / "cases" / "dit.safetensors", "x", _scalar())),
        2,
        ("dit.safetensors holds x of shape []", "golden.json says"),
    ),
    Case(
        "golden-tensor-missing",
        "cli",
        parity(lambda r: mk.replace_tensor(r / "cases" / "dit.safetensors", "x", None)),
        2,
        ("dit.safetensors has no 'x'",),
    ),
    # -- options -----------------------------------------------------------------------------------
    Case("opt-chunk-frames-negative", "cli", render("--chunk-frames", "-4"), 2, ("--chunk-frames must be between 1 and 1000, got -4",)),
    Case("opt-chunk-frames-2", "cli", render("--chunk-frames", "2"), 2, ("--chunk-frames 2 is too short", "it must be 4 or more")),
    Case("opt-chunk-frames-huge", "cli", render("--chunk-frames", "100000"), 2, ("--chunk-frames must be between 1 and 1000, got 100000",)),
    Case("opt-interp-equals-chunk", "cli", render("--chunk-frames", "8", "--interp-frames", "8"), 2, ("must be 9 or more",)),
    Case("opt-interp-negative", "cli", render("--interp-frames", "-1"), 2, ("--interp-frames must be between 0 and 1000, got -1",)),
    Case("opt-steps-0", "cli", render("--steps", "0"), 2, ("invalid sampler setting",)),
    Case("opt-steps-huge", "cli", render("--steps", "100000"), 2, ("--steps must be at most 1000, got 100000",)),
    Case("opt-steps-not-a-number", "cli", render("--steps", "abc"), 2, ("argument --steps: invalid int value: 'abc'", "--help")),
    Case("opt-shift-0", "cli", render("--shift", "0"), 2, ("shift must be > 0",)),
    Case("opt-shift-nan", "cli", render("--shift", "nan"), 2, ("--shift must be a finite number, got nan",)),
    Case("opt-shift-inf", "cli", render("--shift", "inf"), 2, ("--shift must be a finite number, got inf",)),
    Case("opt-seed-negative", "cli", render("--seed", "-1"), 2, ("--seed must be 0 or more",)),
    Case("opt-threads-0", "cli", render("--threads", "0"), 2, ("--threads must be at least 1",)),
    Case("opt-nproc-0", "cli", render("--nproc", "0"), 2, ("--nproc must be 1 or more",)),
    Case("opt-device-tpu", "cli", render("--device", "tpu"), 2, ("unknown device 'tpu'",)),
    Case("opt-device-missing-gpu", "cli", render("--device", "cuda:9"), 2, ("cuda:9", "--device cpu or auto")),
    Case("opt-model-unknown", "cli", render("--model", "nope"), 2, ("invalid choice: 'nope'", "--help")),
    Case("opt-size-malformed", "cli", render("--model", "infinitetalk", "--size", "10x"), 2, ("--size must be WIDTHxHEIGHT such as 832x480",)),
    Case("opt-x264-preset", "cli", render("--x264-preset", "warp"), 2, ("preset 'warp' is not an x264 preset",)),
    Case("opt-unused-by-demo", "cli", render("--text-guidance", "2"), 2, ("the demo-tiny model has no use for --text-guidance, an option of infinitetalk",)),
    Case("opt-dtype-for-demo", "cli", render("--dtype", "bf16"), 2, ("the demo-tiny model has no use for --dtype, an option of infinitetalk",)),
    Case("opt-residency-unknown-module", "cli", render("--residency", "bogus=resident"), 2, ("unknown module 'bogus'", "this model has: vae")),
    Case("opt-residency-unknown-policy", "cli", render("--residency", "a2v_dit=nonsense"), 2, ("unknown residency policy 'nonsense'",)),
    Case("opt-residency-streamed-0", "cli", render("--residency", "a2v_dit=streamed:0"), 2, ("streamed slots must be a whole number >= 1",)),
    Case("opt-residency-sharded-1-proc", "cli", render("--residency", "a2v_dit=sharded"), 2, ("sharded", "--nproc N")),
    Case("opt-residency-twice", "cli", render("--residency", "vae=resident,vae=offloaded"), 2, ("residency for 'vae' is given twice",)),
    Case("opt-residency-no-module", "cli", render("--residency", "=x"), 2, ("bad residency entry '=x'", "module=policy")),
    # -- outputs -----------------------------------------------------------------------------------
    Case("out-none", "cli", render("--out", "-"), 2, ("no output: give an MP4 file (--out)",)),
    Case("out-is-a-folder", "cli", render("--out", lambda t: t), 2, ("cannot write output", "it is a folder", "--out")),
    Case(
        "out-under-a-file",
        "cli",
        render("--out", lambda t: mk.write(t, "file", b"x") / "o.mp4"),
        2,
        ("cannot write output", "is a file, not a folder", "--out"),
    ),
    Case("out-report-is-a-folder", "cli", render("--report", lambda t: t), 2, ("cannot write report", "--report")),
    Case("out-trace-under-a-file", "cli", render("--trace", lambda t: mk.write(t, "file", b"x") / "t.json"), 2, ("cannot write trace", "--trace")),
    Case("out-report-is-the-video", "cli", render("--report", lambda t: t / "o.mp4"), 2, ("--out and --report both name", "a file of its own")),
    Case("out-hls-is-a-file", "cli", render("--hls", lambda t: mk.write(t, "x.txt", b"x")), 2, ("cannot write output", "is a file, not a folder", "--hls")),
    Case("out-rtmp-not-rtmp", "cli", render("--rtmp", "file:///etc/passwd"), 2, ("is not an RTMP publish URL",)),
    Case("out-preview-not-host-port", "cli", render("--preview", "nohost"), 2, ("is not HOST:PORT",)),
    Case("out-preview-port-out-of-range", "cli", render("--preview", "127.0.0.1:99999"), 2, ("is not HOST:PORT",)),
    Case("out-preview-ice-not-a-url", "cli", render("--preview", "127.0.0.1:0", "--ice-server", "stun.example"), 2, ("is not a STUN or TURN URL",)),
    Case("out-preview-port-busy", "cli", render("--preview", lambda t: f"127.0.0.1:{busy_port()}"), 2, ("cannot serve the preview", "in use", "--preview")),
    Case(
        "out-kvs-named-twice",
        "cli",
        render("--kvs", "stream", "--kvs-stream-arn", "arn:aws:kinesisvideo:eu-west-1:123456789012:stream/stream/1"),
        2,
        ("--kvs NAME or --kvs-stream-arn ARN, not both",),
    ),
    Case("out-named-txt", "cli", render("--out", lambda t: t / "o.txt"), 2, ("ends with .txt", "is an MP4", ".mp4 or .m4v")),  # not written, then misnamed
    Case("out-named-avi", "cli", render("--out", lambda t: t / "o.avi"), 2, ("ends with .avi", "is an MP4", ".mp4 or .m4v")),
    Case("out-no-extension", "cli", render("--out", lambda t: t / "video"), 2, ("has no extension", ".mp4 or .m4v")),
    # -- serve -------------------------------------------------------------------------------------
    Case("serve-port-busy", "cli", serve("--port", lambda t: busy_port()), 2, ("cannot serve the API", "in use", "--port")),
    Case("serve-port-out-of-range", "cli", serve("--port", "70000"), 2, ("--port must be in 0..65535",)),
    Case("serve-ice-server-http", "cli", serve("--ice-server", "http://stun.example"), 2, ("--ice-server 'http://stun.example' is not a STUN or TURN URL",)),
    Case(
        "serve-ice-turn-no-credentials", "cli", serve("--ice-server", "turn:relay.example:3478"), 2, ("TURN server without credentials", "USERNAME:CREDENTIAL@")
    ),
    Case("serve-token-short", "cli", serve("--token", "abc"), 2, ("--token must be at least 8 characters",)),
    Case("serve-open-host-no-token", "cli", serve("--host", "0.0.0.0"), 2, ("reachable from other machines", "--token")),
    Case("serve-max-sessions-0", "cli", serve("--max-sessions", "0"), 2, ("max-sessions must be at least 1",)),
    Case("serve-idle-timeout-0", "cli", serve("--idle-timeout", "0"), 2, ("idle-timeout-s must be positive",)),
    Case("serve-max-upload-nan", "cli", serve("--max-upload-mb", "nan"), 2, ("--max-upload-mb must be a number of MiB above 0",)),
    Case("serve-max-upload-0", "cli", serve("--max-upload-mb", "0"), 2, ("--max-upload-mb must be a number of MiB above 0",)),
    Case("serve-queued-audio-negative", "cli", serve("--max-queued-audio", "-1"), 2, ("max-queued-audio-s must be positive",)),
    Case("serve-lookahead-0", "cli", serve("--lookahead", "0"), 2, ("lookahead must be positive",)),
    Case("serve-threads-0", "cli", serve("--threads", "0"), 2, ("--threads must be at least 1",)),
]

API: list[Case] = [
    Case("api-seed-negative", "api", lambda t: {"audio": mk.good_wav(t), "seed": -1}, 2, ("--seed must be 0 or more",)),
    Case("api-model-unknown", "api", lambda t: {"audio": mk.good_wav(t), "model": "nope"}, 2, ("unknown model 'nope'",)),
    Case("api-options-steps-0", "api", lambda t: {"audio": mk.good_wav(t), "model_options": {"steps": 0}}, 2, ("invalid sampler setting",)),
    Case("api-residency-unknown", "api", lambda t: {"audio": mk.good_wav(t), "residency": "bogus=resident"}, 2, ("unknown module 'bogus'",)),
    Case("api-device-tpu", "api", lambda t: {"audio": mk.good_wav(t), "device": "tpu"}, 2, ("unknown device 'tpu'",)),
    Case("api-threads-0", "api", lambda t: {"audio": mk.good_wav(t), "threads": 0}, 2, ("--threads must be at least 1",)),
    Case("api-audio-nan-file", "api", lambda t: {"audio": nan_wav(t)}, 2, NAN_WORDS),
    Case("api-reference-bomb", "api", lambda t: {"audio": mk.good_wav(t), "reference": mk.png_bomb(t)}, 2, ("decompression bomb",)),
    Case("api-out-named-avi", "api", lambda t: {"audio": mk.good_wav(t), "out": t / "o.avi"}, 2, ("ends with .avi", ".mp4 or .m4v")),
    Case("api-report-is-the-video", "api", lambda t: {"audio": mk.good_wav(t), "report": t / "o.mp4"}, 2, ("--out and --report both name",)),
    Case("api-blocks-3-channels", "api", blocks(PcmBlock(np.zeros((3, 1600), np.float32), 16000)), 2, ("1 or 2 channels",)),
    Case("api-blocks-rate-0", "api", blocks(PcmBlock(np.zeros((1, 1600), np.float32), 0)), 2, ("a positive rate",)),
    Case("api-blocks-nan", "api", blocks(PcmBlock(np.full((1, 16000), np.nan, np.float32), 16000)), 2, ("NaN or infinite samples",)),
]


def _up(name: str, data: bytes, kind: str) -> dict[str, Any]:
    return {"files": {name: ("f", data, kind)}}


WAV = {"Content-Type": "audio/wav"}
LIMIT = 256 * 1024  # the test server's upload limit
WAV_WORDS = ("cannot read audio the uploaded audio", "use a WAV, MP3, FLAC or OGG file")
_wav = mk.wav_bytes
_tone = mk.tone

HTTP: list[Case] = [
    Case(
        "http-audio-text-plain",
        "http",
        lambda t: Request("POST", "/sessions/{sid}/audio", {"content": b"hello", "headers": {"Content-Type": "text/plain"}}),
        415,
        ("expected an audio file",),
    ),
    Case(
        "http-audio-no-content-type",
        "http",
        lambda t: Request("POST", "/sessions/{sid}/audio", {"content": b"RIFF"}),
        415,
        ("expected an audio file", "no Content-Type"),
    ),
    Case(
        "http-audio-random-bytes",
        "http",
        lambda t: Request("POST", "/sessions/{sid}/audio", {"content": np.random.default_rng(0).bytes(20000), "headers": WAV}),
        422,
        WAV_WORDS,
    ),
    Case("http-audio-empty-body", "http", lambda t: Request("POST", "/sessions/{sid}/audio", {"content": b"", "headers": WAV}), 422, WAV_WORDS),
    Case("http-audio-header-cut", "http", lambda t: Request("POST", "/sessions/{sid}/audio", {"content": _wav(_tone())[:22], "headers": WAV}), 422, WAV_WORDS),
    Case(
        "http-audio-zero-length",
        "http",
        lambda t: Request("POST", "/sessions/{sid}/audio", {"content": _wav(np.zeros((0, 1))), "headers": WAV}),
        422,
        ("the uploaded audio has zero length",),
    ),
    Case(
        "http-audio-nan",
        "http",
        lambda t: Request("POST", "/sessions/{sid}/audio", {"content": nan_wav(t).read_bytes(), "headers": WAV}),
        422,
        ("the uploaded audio holds NaN",),
    ),
    Case(
        "http-audio-rate-1hz",
        "http",
        lambda t: Request("POST", "/sessions/{sid}/audio", {"content": _wav(_tone(), 1), "headers": WAV}),
        422,
        ("the uploaded audio says its sample rate is 1 Hz",),
    ),
    Case(
        "http-audio-too-large",
        "http",
        lambda t: Request("POST", "/sessions/{sid}/audio", {"content": _wav(_tone(10.0)), "headers": WAV}),
        413,
        ("larger than this server's limit",),
    ),
    Case(
        "http-audio-form-no-field",
        "http",
        lambda t: Request("POST", "/sessions/{sid}/audio", _up("sound", _wav(_tone()), "audio/wav")),
        422,
        ("a field named 'audio'",),
    ),
    Case(
        "http-audio-closed-session",
        "http",
        lambda t: Request("POST", "/sessions/{closed}/audio", {"content": _wav(_tone()), "headers": WAV}),
        404,
        ("no such session",),
    ),
    Case(
        "http-audio-no-decoder",  # found by `make fuzz`: a 500 before
        "http",
        lambda t: Request("POST", "/sessions/{sid}/audio", {"content": _codec_tag(0x1234), "headers": WAV}),
        422,
        ("cannot read audio the uploaded audio", "no decoder for its audio codec"),
    ),
    Case(
        "http-audio-list-claims-4gib",  # found by `make fuzz`: FFmpeg allocated 1 GiB for an 84-byte upload
        "http",
        lambda t: Request("POST", "/sessions/{sid}/audio", {"content": LIST_4GIB, "headers": WAV}),
        422,
        ("cannot read audio the uploaded audio", "'LIST' chunk claims 4294967295 bytes"),
    ),
    Case(
        "http-audio-8-channels",
        "http",
        lambda t: Request("POST", "/sessions/{sid}/audio", {"content": _wav(_tone(channels=8)), "headers": WAV}),
        202,
        (),
        accepted=True,
    ),
    Case("http-interrupt-unknown", "http", lambda t: Request("POST", "/sessions/nope/interrupt"), 404, ("no such session",)),
    Case("http-interrupt-closed", "http", lambda t: Request("POST", "/sessions/{closed}/interrupt"), 404, ("no such session",)),
    Case("http-job-with-session-id", "http", lambda t: Request("GET", "/jobs/{sid}"), 404, ("no such job",)),
    Case("http-create-json-body", "http", lambda t: Request("POST", "/sessions", {"json": {"identity": "default"}}), 415, ("multipart/form-data",)),
    Case(
        "http-create-malformed-multipart",
        "http",
        lambda t: Request("POST", "/sessions", {"content": b"garbage", "headers": {"Content-Type": "multipart/form-data"}}),
        400,
        ("boundary",),
    ),
    Case("http-outputs-not-json", "http", lambda t: Request("POST", "/sessions", {"data": {"outputs": "{nope"}}), 422, ("outputs",)),
    Case(
        "http-outputs-rtmp-file-url",
        "http",
        lambda t: Request("POST", "/sessions", {"data": {"outputs": json.dumps({"rtmp": "file:///etc/passwd"})}}),
        422,
        ("not an RTMP publish URL",),
    ),
    Case("http-identity-unknown", "http", lambda t: Request("POST", "/sessions", {"data": {"identity": "someone"}}), 422, ("unknown identity", "default")),
    Case("http-seed-negative", "http", lambda t: Request("POST", "/sessions", {"data": {"seed": "-1"}}), 422, ("seed must be 0 or more",)),
    Case("http-prompt-too-long", "http", lambda t: Request("POST", "/sessions", {"data": {"prompt": "x" * 2001}}), 422, ("prompt", "at most 2000 characters")),
    Case(
        "http-model-options-not-json", "http", lambda t: Request("POST", "/sessions", {"data": {"model_options": "{nope"}}), 422, ("model_options", "not JSON")
    ),
    Case(
        "http-model-options-not-an-object",
        "http",
        lambda t: Request("POST", "/sessions", {"data": {"model_options": "[12]"}}),
        422,
        ("model_options must be a JSON object", "got an array"),
    ),
    Case(
        "http-model-options-unknown",
        "http",
        lambda t: Request("POST", "/sessions", {"data": {"model_options": '{"colour": "red"}'}}),
        422,
        ("unknown model option colour", "this model takes: avatar, chunk_frames"),
    ),
    Case(
        "http-model-options-out-of-range",
        "http",
        lambda t: Request("POST", "/sessions", {"data": {"model_options": '{"chunk_frames": 100000}'}}),
        422,
        ("model_options: chunk_frames must be between 1 and 1000, got 100000",),
    ),
    Case(
        "http-model-options-avatar-negative",
        "http",
        lambda t: Request("POST", "/sessions", {"data": {"model_options": '{"avatar": -1}'}}),
        422,
        ("avatar must be at least 0",),
    ),
    Case(
        "http-model-options-too-long",
        "http",
        lambda t: Request("POST", "/sessions", {"data": {"model_options": " " * 20001}}),
        422,
        ("model_options", "at most 20000 characters"),
    ),
    Case(
        "http-job-model-options-wrong-type",
        "http",
        lambda t: Request("POST", "/jobs", {"data": {"model_options": '{"steps": "many"}'}, **_up("audio", _wav(_tone()), "audio/wav")}),
        422,
        ("steps must be a whole number",),
    ),
    Case(
        "http-reference-and-avatar",
        "http",
        lambda t: Request("POST", "/sessions", {"data": {"model_options": '{"avatar": 1}'}, **_up("reference", mk.png_file(t).read_bytes(), "image/png")}),
        422,
        ("not both",),  # the family's rule: a request option that picks an identity, and an upload
    ),
    Case(
        "http-reference-not-an-image",
        "http",
        lambda t: Request("POST", "/sessions", _up("reference", b"not an image", "image/png")),
        422,
        ("cannot read reference the uploaded reference", "not an image"),
    ),
    Case("http-reference-text-plain", "http", lambda t: Request("POST", "/sessions", _up("reference", b"x", "text/plain")), 415, ("reference image",)),
    Case(
        "http-reference-bomb",
        "http",
        lambda t: Request("POST", "/sessions", _up("reference", mk.png_bomb_bytes(), "image/png")),
        422,
        ("the uploaded reference", "decompression bomb"),
    ),
    Case(
        "http-reference-text-bomb",
        "http",
        lambda t: Request("POST", "/sessions", _up("reference", mk.png_text_bomb_bytes(), "image/png")),
        422,
        ("the uploaded reference", "Decompressed data too large"),
    ),
    Case(
        "http-reference-1x1",
        "http",
        lambda t: Request("POST", "/sessions", _up("reference", mk.png_tiny(t).read_bytes(), "image/png")),
        422,
        ("the uploaded reference is 1x1 pixels",),
    ),
    Case(
        "http-reference-cut",
        "http",
        lambda t: Request("POST", "/sessions", _up("reference", mk.png_cut(t).read_bytes(), "image/png")),
        422,
        ("the uploaded reference", "truncated"),
    ),
    Case(
        "http-reference-too-large",
        "http",
        lambda t: Request("POST", "/sessions", _up("reference", bytes(LIMIT + 1), "image/png")),
        413,
        ("larger than this server's limit",),
    ),
    Case("http-job-no-audio", "http", lambda t: Request("POST", "/jobs", {"data": {"identity": "default"}}), 422, ("audio", "Field required")),
    Case("http-job-audio-not-audio", "http", lambda t: Request("POST", "/jobs", _up("audio", b"hello", "text/plain")), 415, ("expected an audio file",)),
    Case("http-job-audio-random", "http", lambda t: Request("POST", "/jobs", _up("audio", np.random.default_rng(1).bytes(5000), "audio/wav")), 422, WAV_WORDS),
    Case("http-job-unknown", "http", lambda t: Request("GET", "/jobs/nope"), 404, ("no such job",)),
    Case("http-hls-unknown-name", "http", lambda t: Request("GET", "/sessions/{sid}/hls/.env"), 404, ("no such HLS file",)),
    Case("http-hls-traversal", "http", lambda t: Request("GET", "/sessions/{sid}/hls/..%2F..%2Fsession.json"), 404, ("Not Found",)),
    Case("http-video-while-running", "http", lambda t: Request("GET", "/sessions/{sid}/video.mp4"), 409, ("ready when the session is closed",)),
    Case(
        "http-webrtc-not-json",
        "http",
        lambda t: Request("POST", "/sessions/{sid}/webrtc", {"content": b"{sdp", "headers": {"Content-Type": "application/json"}}),
        422,
        ("JSON decode error",),
    ),
    Case(
        "http-webrtc-not-asked-for",
        "http",
        lambda t: Request("POST", "/sessions/{sid}/webrtc", {"json": {"sdp": "v=0", "type": "offer"}}),
        409,
        ("no WebRTC output",),
    ),
    Case("http-wrong-token", "http", lambda t: Request("GET", "/sessions/{sid}", token="wrong-token-123"), 401, ("bearer token",)),
    Case("http-no-token-create", "http", lambda t: Request("POST", "/sessions", {"data": {"identity": "default"}}, token=None), 401, ("bearer token",)),
    Case("http-no-token-metrics", "http", lambda t: Request("GET", "/metrics", token=None), 401, ("bearer token",)),
]

WS: list[Case] = [
    Case("ws-no-token", "ws", lambda t: Socket(token=None), 401, ("bearer token",)),
    Case("ws-wrong-token", "ws", lambda t: Socket(token="wrong-token-123"), 401, ("bearer token",)),
    Case("ws-unknown-session", "ws", lambda t: Socket(sid="nope"), 404, ("no such session",)),
    Case("ws-closed-session", "ws", lambda t: Socket(sid="{closed}"), 404, ("no such session",)),
    Case("ws-second-socket", "ws", lambda t: Socket(sid="{busy}"), 409, ("already has an audio socket", "one sender per session")),
    Case(
        "ws-pcm-longer-than-10-s",
        "ws",
        lambda t: Socket(query="format=s16le&rate=8000&channels=1", send=(bytes(2 * 8000 * 11),)),
        0,
        ("a PCM message of 11.0 s is longer than 10 s", "smaller pieces"),
    ),
    Case("ws-format-mp4", "ws", lambda t: Socket(query="format=mp4"), 422, ("audio format 'mp4' is not supported",)),
    Case("ws-rate-1", "ws", lambda t: Socket(query="format=s16le&rate=1"), 422, ("sample rate 1 is out of range",)),
    Case("ws-channels-8", "ws", lambda t: Socket(query="format=s16le&channels=8"), 422, ("channels must be 1 or 2",)),
    Case("ws-rate-not-a-number", "ws", lambda t: Socket(query="format=s16le&rate=fast"), 422, ("rate",)),
    Case("ws-half-a-sample", "ws", lambda t: Socket(send=(b"\x01\x02\x03",)), 0, ("whole sample frames",)),
    Case("ws-text-not-json", "ws", lambda t: Socket(send=("not json",)), 0, ("JSON controls",)),
    Case("ws-empty-pcm-then-text", "ws", lambda t: Socket(send=(b"", "not json")), 0, ("JSON controls",)),  # fuzzer: an empty message broke the socket
    Case("ws-unknown-control", "ws", lambda t: Socket(send=(json.dumps({"type": "explode"}),)), 0, ("JSON controls",)),
    Case("ws-broken-wav-clip", "ws", lambda t: Socket(query="format=encoded", send=(b"RIFF" + bytes(100),)), 0, ("the uploaded audio",)),
    Case("ws-garbage-clip", "ws", lambda t: Socket(query="format=encoded", send=(np.random.default_rng(2).bytes(3000),)), 0, ("the uploaded audio",)),
    Case("ws-nan-clip", "ws", lambda t: Socket(query="format=encoded", send=(nan_wav(t).read_bytes(),)), 0, ("the uploaded audio holds NaN",)),
]

ROWS = CLI + API + HTTP + WS
