"""A model of what --parallel layouts buy: fps and time to first frame on G GPUs from one process's figures.

Inputs, all measured: per-chunk stage times of a one-process run (init, chunk
stages, the DiT's share of them, final stages), the DiT's block inputs per
chunk (how many values the all-to-alls move), and the bandwidth and latency of
the collectives at each group size. The model:

- **sp=S** divides the DiT's compute by S (every layer is split: linear layers
  by tokens, attention by heads) and adds 4 all-to-alls per block (q, k, v to
  heads, the output back), each moving (S-1)/S of the rank's share, and one
  all-gather of the output per forward;
- **cfg=C** runs ceil(P/C) of a step's P predictions per rank (compute
  proportional to predictions) plus one all-gather of the predictions;
- **decode** takes the final stages off the generating ranks: a chunk then
  costs max(generate, finals + hand-over) instead of their sum;
- **steps=N** (families whose steps keep their own caches) runs one of a
  block's N steps per rank, as a pipeline: each rank costs the unsplit chunk
  stages, 1/N of the DiT and a block's latents in and out; the slowest rank
  sets the pace (the last step's also runs the final stages without a decode
  rank). Time to first frame gains nothing: the first block still passes
  through every step, one rank after another. With **sp=S** each step is a
  group of S ranks: its 1/N of the DiT is divided by S and pays the sp
  collectives of its forwards, as above;
- the other chunk stages (audio features, noise) run on every rank, unsplit;
- time to first frame = init + first chunk + its finals (nothing to overlap yet).

It ignores what it cannot see from one process: kernel efficiency at smaller
per-rank shapes and contention between ranks for host cores.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from avatarstream.runtime.parallel.layout import ParallelLayout

A2A_PER_BLOCK = 4  # q, k and v to heads, the attention output back to tokens


@dataclass(frozen=True)
class ChunkWork:
    """One process's figures per executed chunk (seconds, values)."""

    init_s: float  # init stages, once per session
    chunk_s: float  # every chunk stage (audio features, noise, the DiT's steps)
    dit_s: float  # the stage that runs the split DiT
    final_s: float  # super-resolution, decode
    frames_per_chunk: float  # published video frames per executed chunk
    predictions: int  # DiT predictions per step (guidance)
    block_values: float  # values of the DiT blocks' inputs per chunk, over every forward (B x N x D summed)
    block_calls: float  # DiT block calls per chunk
    forwards: float  # DiT forwards per chunk
    output_values: float  # values of the DiT's outputs per chunk (what the per-forward all-gather assembles)
    value_bytes: int  # bytes per value of the blocks' activations
    stretch_bytes: float  # latents to the decode rank and frames back, per chunk
    heads: int  # attention heads of the split DiT
    split_steps: int = 0  # denoising steps per block when they can run on ranks of their own (steps=N), else 0
    latent_bytes: float = 0.0  # one chunk's latents: what a step's rank hands the next


@dataclass(frozen=True)
class Link:
    """A collective's cost at one group size: seconds = latency + bytes / bandwidth (bytes each rank sends)."""

    bytes_per_s: float
    latency_s: float

    def seconds(self, nbytes: float, calls: float = 1.0) -> float:
        return calls * self.latency_s + nbytes / self.bytes_per_s


@dataclass(frozen=True)
class Prediction:
    layout: str
    gpus: int
    fps: float
    ttff_s: float
    chunk_s: float
    comm_s: float  # of chunk_s: collectives and hand-over on the critical path


def predict(work: ChunkWork, layout: ParallelLayout, all_to_all: Link | None, point_to_point: Link | None, all_gather: Link | None = None) -> Prediction:
    """The layout's steady-state fps and time to first frame; ``all_to_all`` and ``all_gather`` at the layout's sp size,
    ``point_to_point`` for the decode rank."""
    if layout.steps > 1:
        return _predict_steps(work, layout, point_to_point, all_to_all, all_gather)
    share = math.ceil(work.predictions / layout.cfg) / work.predictions  # of the DiT's work this rank still does
    dit, comm = _split_dit(work, layout.sp, share, all_to_all, all_gather)
    generate = work.chunk_s - work.dit_s + dit + comm
    if layout.decode:
        assert point_to_point is not None, "a decode rank needs the point-to-point cost"
        hand_over = point_to_point.seconds(work.stretch_bytes, 2)
        chunk = max(generate, work.final_s + hand_over)
        first = work.init_s + generate + work.final_s + hand_over
    else:
        chunk = generate + work.final_s
        first = work.init_s + chunk
    return Prediction(layout.text(), layout.processes, round(work.frames_per_chunk / chunk, 3), round(first, 4), round(chunk, 5), round(comm, 5))


def _split_dit(work: ChunkWork, sp: int, share: float, all_to_all: Link | None, all_gather: Link | None) -> tuple[float, float]:
    """(compute, collectives) of a rank's ``share`` of the DiT's work per chunk, split over an sp group of ``sp``."""
    if sp == 1:
        return work.dit_s * share, 0.0
    assert all_to_all is not None, "an sp layout needs the all-to-all's cost"
    moved = A2A_PER_BLOCK * work.block_values * share * work.value_bytes / sp * (sp - 1) / sp
    comm = all_to_all.seconds(moved, A2A_PER_BLOCK * work.block_calls * share)
    gather = all_gather or all_to_all
    comm += gather.seconds(work.output_values * share * work.value_bytes * (sp - 1) / sp, work.forwards * share)
    return work.dit_s * share / sp, comm


def _predict_steps(work: ChunkWork, layout: ParallelLayout, link: Link | None, all_to_all: Link | None, all_gather: Link | None) -> Prediction:
    """``steps=N[,sp=S]``: a pipeline of N step groups (and a decode rank); the slowest rank's time per chunk sets the pace."""
    assert link is not None, "a steps layout needs the point-to-point cost"
    assert work.split_steps == layout.steps, f"steps={layout.steps} runs one step per rank; this model makes {work.split_steps} (0: its steps cannot split)"
    hand = link.seconds(work.latent_bytes)  # one block's latents from one step's rank to the next
    finals = work.final_s + link.seconds(work.stretch_bytes)  # and the frames to the lead (latents to a decode rank too)
    dit, split_comm = _split_dit(work, layout.sp, 1 / layout.steps, all_to_all, all_gather)  # one step of the DiT, over its sp group
    step = work.chunk_s - work.dit_s + dit + split_comm  # and the unsplit chunk stages
    if layout.decode:
        chunk, comm = max((step + 2 * hand, split_comm + 2 * hand), (finals, finals - work.final_s))
    else:
        chunk, comm = step + hand + max(hand, finals), split_comm + hand + max(hand, finals - work.final_s)
    first = work.init_s + work.chunk_s + (layout.steps - 1) * hand + finals
    return Prediction(layout.text(), layout.processes, round(work.frames_per_chunk / chunk, 3), round(first, 4), round(chunk, 5), round(comm, 5))


def layouts(gpus: int, heads: int, predictions: int, split_steps: int = 0) -> list[ParallelLayout]:
    """Every layout of ``gpus`` processes this model can run (sp divides the heads, cfg at most the predictions, steps=N
    with an sp group per step when the model's N steps can split)."""
    found = []
    for decode in (False, True):
        generating = gpus - int(decode)
        step_sp, rest = divmod(generating, split_steps) if split_steps > 1 else (0, 1)
        if step_sp and not rest and heads % step_sp == 0:
            found.append(ParallelLayout(sp=step_sp, decode=decode, steps=split_steps))
        for sp in range(1, generating + 1):
            cfg, rest = divmod(generating, sp)
            if rest or heads % sp or (cfg > 1 and cfg > predictions):
                continue
            layout = ParallelLayout(sp, cfg, decode)
            if layout.splits:
                found.append(layout)
    return found


def table(
    work: ChunkWork, gpus: list[int], all_to_all: dict[int, Link], point_to_point: Link | None, all_gather: dict[int, Link] | None = None
) -> list[dict[str, object]]:
    """Predictions for every layout of every GPU count; an sp size larger than any measured takes the largest measured
    group's link (per-rank all-to-all bandwidth is about flat on one NVLink node) and is marked ``extrapolated``."""
    rows: list[dict[str, object]] = []
    for count in gpus:
        for layout in layouts(count, work.heads, work.predictions, work.split_steps):
            if (layout.sp > 1 and not all_to_all) or ((layout.decode or layout.steps > 1) and point_to_point is None):
                continue
            measured = layout.sp in all_to_all or layout.sp == 1
            link = all_to_all.get(layout.sp) or (all_to_all[max(all_to_all)] if all_to_all else None)
            gathers = all_gather or {}
            gather = gathers.get(layout.sp) or (gathers[max(gathers)] if gathers else None)
            rows.append({**asdict(predict(work, layout, link, point_to_point, gather)), "extrapolated": not measured})
    return rows
