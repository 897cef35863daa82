"""The FlashVSR golden cases: one DiT call, the LQ projection, the TCDecoder, the Wan VAE, and the whole stream.

Every size comes from ``golden.json`` and the weights folder. The stream case
runs the set's low-resolution frames through ``FlashVSRStream`` in uneven
pieces (tiny and full mode) with the stored noise, and checks the upscale, each
call's LQ tokens and block masks, x0, the decoded and colour-fixed frames and
the uint8 frames; each call's velocity is also checked teacher-forced (the
stored LQ tokens, and for the call the set stores it, the stored KV cache).
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from diffusers.models.autoencoders.autoencoder_kl_wan import AutoencoderKLWan
from PIL import Image

from avatarstream.components.wan.load_vae import load_vae
from avatarstream.components.wan.vae import DecoderCache, decode
from avatarstream.errors import InputError
from avatarstream.families.flashvsr.layout import resolve
from avatarstream.families.flashvsr.networks import FlashVSRNetworks
from avatarstream.models.flashvsr.block_mask import topk_ratio
from avatarstream.models.flashvsr.config import CALL_LATENTS, FIRST_CALL_LATENTS, PIXELS_PER_TOKEN, TIMESTEP
from avatarstream.models.flashvsr.dit import KVCache, Sparsity
from avatarstream.models.flashvsr.frames import to_unit, upscale
from avatarstream.models.flashvsr.stream import CallRecord, FlashVSRStream, first_latent
from avatarstream.models.flashvsr.tcdecoder import DecoderMemory, TCDecoder
from avatarstream.models.flashvsr.windows import windows_per_slab
from avatarstream.parity.checks import Check
from avatarstream.parity.fixture import Entries, GoldenSet, run_each
from avatarstream.parity.video import psnr
from avatarstream.weights.files import read_safetensors
from avatarstream.weights.sandbox import inside

CPU = torch.device("cpu")
#: The uneven pieces the stream case pushes the input in (the rest at once).
PIECES = (7, 13, 1)


@dataclass
class ParityNetworks:
    tiny: FlashVSRNetworks
    vae: AutoencoderKLWan

    @property
    def full(self) -> FlashVSRNetworks:
        return dataclasses.replace(self.tiny, decoder=self.vae)


def _tensors(gs: GoldenSet, name: str) -> Entries:
    path = inside(gs.root, gs.root / "cases" / f"{name}.safetensors")
    return Entries(read_safetensors(path), str(path))


def _scalar_tolerance(gs: GoldenSet, case: str) -> float:
    value = gs.case(case)["tolerance"]
    if not isinstance(value, int | float):
        raise InputError(f"{gs.root / 'golden.json'} case {case!r}: tolerance must be a number, got {value!r}")
    return float(value)


def _pngs(folder: Path) -> torch.Tensor:
    paths = sorted(folder.glob("frame_*.png"))  # frame_0000.png ...: zero-padded, so name order is frame order
    if not paths:
        raise InputError(f"{folder} holds no PNG frames; the golden set is incomplete")
    return torch.from_numpy(np.stack([np.asarray(Image.open(p).convert("RGB")) for p in paths]))


def _masks(masks: list[torch.Tensor]) -> torch.Tensor:
    return torch.stack(masks).to(torch.uint8)


def _stored_noise(noise: torch.Tensor) -> Callable[[int, int], torch.Tensor]:
    """Slices of the set's noise; latent frames past it (which only frames the reference drops depend on) are zeros."""

    def draw(first: int, count: int) -> torch.Tensor:
        out = noise.new_zeros(*noise.shape[:2], count, *noise.shape[3:])
        stored = max(0, min(count, noise.shape[2] - first))
        out[:, :, :stored] = noise[:, :, first : first + stored]
        return out

    return draw


def dit_case(gs: GoldenSet, nets: ParityNetworks) -> list[Check]:
    t, settings, tol = _tensors(gs, "dit"), gs.case("dit")["settings"], gs.tolerance("dit", "v")
    dit = nets.tiny.dit
    step = dit.timestep(float(settings["timestep"]), torch.float32, CPU)
    sparsity = Sparsity(int(settings["local_range"]), float(settings["topk_ratio"]), int(settings["kv_ratio"]))
    call = int(settings["cur_process_idx"])
    masks: list[torch.Tensor] = []
    cache = KVCache.empty(dit.config.num_layers)
    v = dit(t["x"], step, dit.cross_kv(nets.tiny.prompt), [t["lq_latents"]], cache, first_latent(call), sparsity, masks)
    return [
        Check.compare("dit", "t", step.t, t["t"], tol),
        Check.compare("dit", "t_mod", step.t_mod, t["t_mod"], tol),
        Check.compare("dit", "block_masks", _masks(masks), t["block_masks"], 0.0),
        Check.compare("dit", "v", v, t["v"], tol),
    ]


def lq_proj_case(gs: GoldenSet, nets: ParityNetworks) -> list[Check]:
    t, tol = _tensors(gs, "lq_proj"), _scalar_tolerance(gs, "lq_proj")
    groups = sorted(k for k in t if k.startswith("out_group"))
    video = t["lq_video"]
    return [Check.compare("lq_proj", key, nets.tiny.lq_proj(video[:, :, 1 + 4 * g : 5 + 4 * g])[0], t[key], tol) for g, key in enumerate(groups)]


def tcdecoder_case(gs: GoldenSet, nets: ParityNetworks) -> list[Check]:
    t, tol = _tensors(gs, "tcdecoder"), _scalar_tolerance(gs, "tcdecoder")
    decoder = nets.tiny.decoder
    assert isinstance(decoder, TCDecoder)
    cond = to_unit(t["cond_u8"], torch.float32, CPU)
    cond = torch.cat([cond[:, :, :1].expand(-1, -1, 3, -1, -1), cond], dim=2)  # frame 0 stands for the 3 before it
    whole = decoder.decode(t["latents"], cond, DecoderMemory())
    memory = DecoderMemory()
    parts = [decoder.decode(t["latents"][:, :, i : i + 1], cond[:, :, 4 * i : 4 * i + 4], memory) for i in range(t["latents"].shape[2])]
    return [
        Check.compare("tcdecoder", "frames", whole, t["frames"], tol),
        Check.compare("tcdecoder", "frames, latent frame by latent frame", torch.cat(parts, dim=2), t["frames"], tol),
    ]


def vae_case(gs: GoldenSet, nets: ParityNetworks) -> list[Check]:
    t, tol = _tensors(gs, "vae"), _scalar_tolerance(gs, "vae")
    video = decode(nets.vae, t["z"], DecoderCache.for_vae(nets.vae))
    return [Check.compare("vae", "video", video, t["video"], tol)]


def _run_stream(nets: FlashVSRNetworks, lr: torch.Tensor, noise: torch.Tensor, settings: Entries) -> tuple[torch.Tensor, list[CallRecord]]:
    records: list[CallRecord] = []
    stream = FlashVSRStream(
        nets,
        noise=_stored_noise(noise),
        sparse_ratio=float(settings["sparse_ratio"]),
        local_range=int(settings["local_range"]),
        kv_ratio=int(settings["kv_ratio"]),
        color_fix=bool(settings["color_fix"]),
        device=CPU,
        dtype=torch.float32,
        probe=records.append,
    )
    bounds = [*itertools.accumulate((0, *PIECES)), lr.shape[0]]
    out = [stream.push(lr[a:b]) for a, b in itertools.pairwise(bounds)]
    return torch.cat([*out, stream.finish()]), records


def _frame(records: list[CallRecord], index: int, what: str) -> torch.Tensor:
    record = next(r for r in records if r.first_frame <= index < r.first_frame + r.decoded.shape[2])
    frames = record.decoded if what == "decoded" else record.output
    return frames[0, :, index - record.first_frame : index - record.first_frame + 1]


def _teacher_forced(gs: GoldenSet, nets: FlashVSRNetworks, t: Entries, settings: Entries, height: int, width: int) -> list[Check]:
    """Each call's velocity and masks from the stored noise and LQ tokens; the stored cache before the call that has one."""
    tol = gs.tolerance("stream", "c_v")
    dit = nets.dit
    step, cross = dit.timestep(TIMESTEP, torch.float32, CPU), dit.cross_kv(nets.prompt)
    sparsity = Sparsity(int(settings["local_range"]), topk_ratio(float(settings["sparse_ratio"]), height, width), int(settings["kv_ratio"]))
    cache, cache_call, cache_tol = KVCache.empty(dit.config.num_layers), int(settings["dit_cache_call"]), gs.tolerance("stream", "cache")
    per_slab = windows_per_slab(height // PIXELS_PER_TOKEN, width // PIXELS_PER_TOKEN)
    layers = range(dit.config.num_layers)
    checks = []
    for call in range(int(settings["process_total_num"])):
        if call == cache_call:
            for i in layers:
                for kind, held in (("k", cache.keys[i]), ("v", cache.values[i])):
                    checks.append(
                        Check.compare("stream", f"c{call} cache {kind} before, layer {i}", _held(held), t[f"c{call}_cache_{kind}_in_l{i}"], cache_tol)
                    )
            cache = KVCache([t[f"c{call}_cache_k_in_l{i}"] for i in layers], [t[f"c{call}_cache_v_in_l{i}"] for i in layers])
        first, count = first_latent(call), FIRST_CALL_LATENTS if call == 0 else CALL_LATENTS
        masks: list[torch.Tensor] = []
        v = dit(t["noise"][:, :, first : first + count], step, cross, [t[f"c{call}_lq_latents"]], cache, first, sparsity, masks)
        checks.append(Check.compare("stream", f"c{call}_v (teacher-forced)", v, t[f"c{call}_v"], tol))
        checks.append(Check.compare("stream", f"c{call}_block_masks (teacher-forced)", _masks(masks), t[f"c{call}_block_masks"], 0.0))
        if call == cache_call:
            for i in layers:
                for kind, held in (("k", cache.keys[i]), ("v", cache.values[i])):
                    appended = _held(held)[-per_slab:]
                    checks.append(
                        Check.compare("stream", f"c{call} cache {kind} appended, layer {i}", appended, t[f"c{call}_cache_{kind}_new_l{i}"], cache_tol)
                    )
    return checks


def _held(tensor: torch.Tensor | None) -> torch.Tensor:
    return torch.empty(0) if tensor is None else tensor


def _uint8_checks(case: str, ours: torch.Tensor, golden: torch.Tensor, limits: Entries) -> list[Check]:
    error = ours.to(torch.int64) - golden.to(torch.int64)
    worst = min(psnr(float(e.square().sum()), e.numel()) for e in error)
    return [
        Check(case, "uint8 max LSB", float(error.abs().max()), float(limits["max_lsb"])),
        Check(case, "uint8 fraction differing", float((error != 0).double().mean()), float(limits["max_fraction_differing"])),
        Check(case, "uint8 worst frame PSNR dB", worst, float(limits["min_psnr_db_all_frames"]), "min"),
    ]


def stream_case(gs: GoldenSet, nets: ParityNetworks) -> list[Check]:
    t, case, full = _tensors(gs, "stream"), gs.case("stream"), _tensors(gs, "stream_full")
    settings, tolerance = case["settings"], case["tolerance"]
    lr = _pngs(inside(gs.root, gs.root / "cases" / "lr_frames"))
    expected = int(settings["n_output_frames"])
    padded = torch.cat([lr, lr[-1:].expand(int(settings["num_frames_F"]) - lr.shape[0], -1, -1, -1)])
    hr = upscale(padded)
    checks = [
        Check("stream", "hr upscale sha256", float(hashlib.sha256(hr.numpy().tobytes()).hexdigest() != case["hr_upscaled_u8_sha256"]), 0.0),
        Check.compare("stream", "hr first frame", hr[0], t["hr_u8_first"], 0.0),
        Check.compare("stream", "hr last frame", hr[-1], t["hr_u8_last"], 0.0),
    ]
    frames, records = _run_stream(nets.tiny, lr, t["noise"], settings)
    checks.append(Check("stream", "frames out = frames in", float(abs(frames.shape[0] - lr.shape[0])), 0.0))
    for r in records[: int(settings["process_total_num"])]:
        checks.append(Check.compare("stream", f"c{r.index}_lq_latents", r.lq_tokens[0], t[f"c{r.index}_lq_latents"], float(tolerance["c_lq_latents"])))
        checks.append(Check.compare("stream", f"c{r.index}_block_masks", _masks(r.masks), t[f"c{r.index}_block_masks"], 0.0))
    x0 = torch.cat([r.x0 for r in records], dim=2)[:, :, : t["x0_latents"].shape[2]]
    checks.append(Check.compare("stream", "x0_latents", x0, t["x0_latents"], float(tolerance["x0_latents"])))
    for index in settings["raw_frames"]:
        checks.append(
            Check.compare(
                "stream", f"decoded_raw_float frame {index}", _frame(records, index, "decoded"), t["decoded_raw_float"], float(tolerance["decoded_raw_float"])
            )
        )
    for index in settings["float_frames"]:
        checks.append(
            Check.compare("stream", f"output_float frame {index}", _frame(records, index, "output"), t["output_float"], float(tolerance["output_float"]))
        )
    checks += _uint8_checks("stream", frames[:expected], _pngs(inside(gs.root, gs.root / "cases" / "output_tiny")), tolerance["output_u8"])
    checks += _teacher_forced(gs, nets.tiny, t, settings, hr.shape[1], hr.shape[2])
    full_frames, full_records = _run_stream(nets.full, lr, t["noise"], settings)
    chosen = list(settings["full_frames"])
    floats = torch.cat([_frame(full_records, i, "output") for i in chosen], dim=1)
    checks.append(Check.compare("stream", "full mode output_float", floats, full["output_float"], float(tolerance["output_float"])))
    error = full_frames[chosen].to(torch.int64) - full["output_u8"].to(torch.int64)
    checks.append(Check("stream", "full mode uint8 max LSB", float(error.abs().max()), float(tolerance["output_u8"]["max_lsb"])))
    return checks


CASES = {"stream": stream_case, "dit": dit_case, "lq_proj": lq_proj_case, "tcdecoder": tcdecoder_case, "vae": vae_case}


def run_cases(gs: GoldenSet, on_case: Callable[[str], None]) -> list[Check]:
    """Load ``weights/FlashVSR`` in float32 on the CPU (as the fixtures were made), both decoders, and run each case."""
    folder = gs.weights / "FlashVSR"

    def load() -> ParityNetworks:
        return ParityNetworks(FlashVSRNetworks.load(resolve(folder, "tiny")), load_vae(folder, "original", torch.float32))

    return run_each(gs, CASES, load, on_case)
