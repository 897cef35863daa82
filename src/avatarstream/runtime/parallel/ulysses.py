"""Ulysses sequence parallelism, split by frames.

Each rank of a sequence-parallel group holds a contiguous run of a chunk's
latent frames (all tokens of those frames), so everything that works per
token or per frame (cross-attention, frame-local audio attention, FFN,
modulation) runs on local tokens unchanged. Self-attention needs every token:
one all-to-all before it turns [local tokens, all heads] into [all tokens,
heads / S], one after it turns the result back. Frames that do not divide
evenly give the first ranks one more (the all-to-alls take uneven splits, so
nothing is padded and no mask is needed). A model's output is gathered once
per forward, after its last per-token layer.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import Tensor, nn

from avatarstream.errors import InputError
from avatarstream.runtime.parallel.strategy import Strategy

if TYPE_CHECKING:
    from avatarstream.runtime.parallel.groups import ParallelGroups


def frame_counts(frames: int, ranks: int) -> list[int]:
    """Frames of each rank: contiguous, as even as possible, the first ranks one more."""
    base, extra = divmod(frames, ranks)
    return [base + (r < extra) for r in range(ranks)]


@dataclass
class FrameShards:
    """One forward's split of ``frames`` frames of ``tokens_per_frame`` tokens over a group."""

    group: dist.ProcessGroup
    frames: int
    tokens_per_frame: int

    def __post_init__(self) -> None:
        self.size = dist.get_world_size(self.group)
        self.rank = dist.get_rank(self.group)
        if self.frames < self.size:
            raise InputError(f"a chunk of {self.frames} latent frames cannot be split over sp={self.size} ranks; use a smaller sp or longer chunks")
        self.frame_counts = frame_counts(self.frames, self.size)
        self.token_counts = [n * self.tokens_per_frame for n in self.frame_counts]
        self.first_frame = sum(self.frame_counts[: self.rank])

    @property
    def local_frames(self) -> slice:
        return slice(self.first_frame, self.first_frame + self.frame_counts[self.rank])

    @property
    def local_tokens(self) -> slice:
        first = self.first_frame * self.tokens_per_frame
        return slice(first, first + self.token_counts[self.rank])

    def gather_tokens(self, local: Tensor, dim: int = 1) -> Tensor:
        """The full sequence on every rank from each rank's tokens along ``dim`` (one all-gather, padded to the longest)."""
        longest = max(self.token_counts)
        moved = local.movedim(dim, 0).contiguous()
        padded = moved.new_zeros((longest, *moved.shape[1:]))
        padded[: moved.shape[0]] = moved
        parts = [torch.empty_like(padded) for _ in range(self.size)]
        dist.all_gather(parts, padded, group=self.group)
        return torch.cat([part[:n] for part, n in zip(parts, self.token_counts, strict=True)]).movedim(0, dim)

    def sequence_to_heads(self, x: Tensor) -> Tensor:
        """[B, H, n_local, d] -> [B, H / S, N, d]: every token, this rank's heads."""
        b, h, n, d = x.shape
        send = x.reshape(b, self.size, h // self.size, n, d).permute(1, 3, 0, 2, 4).reshape(self.size * n, b, h // self.size, d).contiguous()
        received = send.new_empty((sum(self.token_counts), b, h // self.size, d))
        dist.all_to_all_single(received, send, self.token_counts, [n] * self.size, group=self.group)
        return received.permute(1, 2, 0, 3)

    def heads_to_sequence(self, x: Tensor) -> Tensor:
        """[B, H / S, N, d] -> [B, H, n_local, d]: this rank's tokens, every head."""
        b, hs, _, d = x.shape
        n = self.token_counts[self.rank]
        send = x.permute(2, 0, 1, 3).contiguous()  # [N, B, H/S, d], ranks' tokens in order
        received = send.new_empty((self.size * n, b, hs, d))
        dist.all_to_all_single(received, send, [n] * self.size, self.token_counts, group=self.group)
        return received.reshape(self.size, n, b, hs, d).permute(2, 0, 3, 1, 4).reshape(b, self.size * hs, n, d)

    def local_heads(self, x: Tensor) -> Tensor:
        """This rank's heads of a tensor every rank holds whole ([B, H, M, d]: keys of tokens outside the split)."""
        return heads_of(x, self.rank, self.size)

    def attention(self, q: Tensor, k: Tensor, v: Tensor, replicated_keys: int = 0) -> Tensor:
        """Self-attention of the whole sequence from local q, k, v [B, H, prefix + n_local, d]; returns [B, H, n_local, d].

        The first ``replicated_keys`` keys/values are the same on every rank
        (memory tokens such as a reference): they are cut to this rank's heads
        and put in front of the gathered keys, as one process would.
        """
        m = replicated_keys
        heads = q.shape[1]
        if heads % self.size:
            raise InputError(f"{heads} attention heads cannot be split over sp={self.size} ranks; use an sp that divides {heads}")
        q_all = self.sequence_to_heads(q)
        k_all = self.sequence_to_heads(k[:, :, m:])
        v_all = self.sequence_to_heads(v[:, :, m:])
        if m:
            k_all = torch.cat([self.local_heads(k[:, :, :m]), k_all], dim=2)
            v_all = torch.cat([self.local_heads(v[:, :, :m]), v_all], dim=2)
        return self.heads_to_sequence(F.scaled_dot_product_attention(q_all, k_all, v_all))


def heads_of(x: Tensor, rank: int, ranks: int, dim: int = 1) -> Tensor:
    """Rank ``rank``'s share of the heads (axis ``dim``) of a tensor held whole: the same heads the all-to-alls give it."""
    per_rank = x.shape[dim] // ranks
    return x.narrow(dim, rank * per_rank, per_rank)


def check_heads(heads: int, sp: int, what: str) -> None:
    """A clear error before any forward when ``sp`` does not divide the head count."""
    if heads % sp:
        divisors = [n for n in range(1, heads + 1) if heads % n == 0]
        raise InputError(f"{what} has {heads} attention heads, which sp={sp} does not divide; use sp = {' or '.join(map(str, divisors))}")


#: (args of the network's forward) -> (latent frames, tokens per frame) of this forward.
Measure = Callable[[tuple[Any, ...]], tuple[int, int]]


def patched_latents(patch_h: int, patch_w: int) -> Measure:
    """The ``measure`` of a network whose first argument is latents [B, C, frames, H, W] cut into ``patch_h`` x ``patch_w`` tokens."""

    def measure(args: tuple[Any, ...]) -> tuple[int, int]:
        x = args[0]
        return x.shape[2], (x.shape[3] // patch_h) * (x.shape[4] // patch_w)

    return measure


#: (shards, a block's args, its kwargs, whether it is the first block) -> the args and kwargs of this rank's frames.
Localize = Callable[[FrameShards, tuple[Any, ...], dict[str, Any], bool], tuple[tuple[Any, ...], dict[str, Any]]]


class SequenceSplit:
    """Runs a DiT's blocks on this rank's frames: hooks, not a second copy of the model's forward.

    The network's pre-hook measures the forward (``measure``); each block's
    pre-hook hands it this rank's part of its inputs (``localize``: the first
    block cuts the token sequence, every block its per-token and per-frame
    inputs); ``output``'s hook gathers the full sequence once. The family's
    self-attention calls ``attention`` instead of attending alone.
    """

    def __init__(self, group: dist.ProcessGroup, network: nn.Module, blocks: Sequence[nn.Module], output: nn.Module, measure: Measure,
                 localize: Localize) -> None:  # fmt: skip
        self.group = group
        self.measure = measure
        self.localize = localize
        self._shards: FrameShards | None = None
        network.register_forward_pre_hook(self._start)
        for index, block in enumerate(blocks):
            block.register_forward_pre_hook(functools.partial(self._enter, first=index == 0), with_kwargs=True)
        output.register_forward_hook(self._gather)

    @property
    def shards(self) -> FrameShards:
        assert self._shards is not None, "shards exist during the network's forward"
        return self._shards

    def attention(self, q: Tensor, k: Tensor, v: Tensor, replicated_keys: int = 0) -> Tensor:
        return self.shards.attention(q, k, v, replicated_keys)

    def _start(self, _module: nn.Module, args: tuple[Any, ...]) -> None:
        frames, tokens_per_frame = self.measure(args)
        self._shards = FrameShards(self.group, frames, tokens_per_frame)

    def _enter(self, _module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], *, first: bool) -> tuple[tuple[Any, ...], dict[str, Any]]:
        if self._shards is None:  # not inside the network's forward: nothing is split
            return args, kwargs
        return self.localize(self._shards, args, kwargs, first)

    def _gather(self, _module: nn.Module, _args: tuple[Any, ...], output: Tensor) -> Tensor:
        gathered = self.shards.gather_tokens(output, dim=1)
        self._shards = None  # the forward is done
        return gathered


#: Splits a network's forward over a sequence-parallel group (installs hooks, swaps attention): a family's part of ``sp``.
SplitNetwork = Callable[[nn.Module, dist.ProcessGroup], None]
_split_networks: weakref.WeakKeyDictionary[nn.Module, dist.ProcessGroup] = weakref.WeakKeyDictionary()  # network -> its sp group, for good


@dataclass(frozen=True)
class SplitsSequence:
    """What a model declares for ``sp``: a network and how its tokens split over a group (``SplitNetwork``)."""

    name: str  # the module's, for errors
    network: nn.Module
    split: SplitNetwork


class SequenceParallel(Strategy):
    """``sp=S``: the declared networks' tokens split by frames over S ranks (Ulysses all-to-alls around self-attention)."""

    key = "sp"
    summary = "sp=S: each DiT forward's tokens over S ranks (Ulysses), for models whose DiT declares the split"

    def apply(self, parts: Sequence[Any], group: dist.ProcessGroup | None, groups: ParallelGroups) -> None:
        """Split each network over this rank's sp group, once: its hooks stay, so a network split for one group cannot serve another."""
        for part in parts:
            assert isinstance(part, SplitsSequence), "sp splits what a model declares as SplitsSequence"
            split_for = _split_networks.get(part.network)
            if split_for is not None and split_for is not group:
                raise InputError(f"module {part.name!r} was split for another parallel layout and a split cannot be undone; load the model again")
            if group is not None and split_for is None:
                part.split(part.network, group)
                _split_networks[part.network] = group

    def refuse(self, size: int) -> str:
        return "this model has no network that splits its sequence; use sp=1"
