"""``--parallel sp=S,cfg=C[,decode]`` or ``steps=N[,sp=S][,decode]``: how the processes of one session split its work.

``sp`` ranks split each DiT forward's tokens (Ulysses), ``cfg`` ranks split a
step's guidance predictions, and ``decode`` adds one rank that runs the final
stages (super-resolution, VAE decode) of chunk k while the others generate
chunk k+1. ``steps`` groups split a block's denoising steps: group i runs step
i of block b while group i-1 runs step i-1 of block b+1 (for models that
declare their steps each keep their own cache); each group is one rank, or
``sp`` ranks splitting that step's forwards (rank ``i * sp + s``). A strategy a
package installs (``strategy.py``) adds its own word, ``key=N``: one more
axis of the rank grid, outside the others. The processes are ``sp * cfg *
steps`` times every such ``N`` (+1 with ``decode``). Without ``--parallel``
every process computes everything, which is what FSDP2 sharding alone needs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from avatarstream.errors import InputError
from avatarstream.runtime.parallel.registry import registered

KEYS = ("sp", "cfg", "steps", "decode")
EXAMPLE = "sp=2,cfg=2, sp=4,decode, steps=4,decode or steps=4,sp=2"


@dataclass(frozen=True)
class ParallelLayout:
    sp: int = 1
    cfg: int = 1
    decode: bool = False
    steps: int = 1  # groups of sp ranks a block's denoising steps are split over (one step each)
    extra: tuple[tuple[str, int], ...] = ()  # installed strategies' axes, (word, size), outermost last

    @property
    def axes(self) -> tuple[tuple[str, int], ...]:
        """The rank grid's axes, innermost first: rank = sum of each coordinate times the sizes of the axes inside it."""
        return (("sp", self.sp), ("steps", self.steps) if self.steps > 1 else ("cfg", self.cfg), *self.extra)

    @property
    def sizes(self) -> dict[str, int]:
        """Every strategy the layout names, with its size (``decode``: 1), in the order they are applied."""
        named = {key: size for key, size in self.axes if size > 1}
        return {**named, **({"decode": 1} if self.decode else {})}

    @property
    def generating_ranks(self) -> int:
        return math.prod(size for _, size in self.axes)

    @property
    def processes(self) -> int:
        return self.generating_ranks + int(self.decode)

    @property
    def splits(self) -> bool:
        """Whether the layout divides work at all (otherwise every rank runs the whole pipeline)."""
        return self.processes > 1

    @property
    def decode_rank(self) -> int | None:
        return self.generating_ranks if self.decode else None

    @property
    def last_step_rank(self) -> int:
        """The rank that hands a block's final latents on (0 unless the steps are split: the last step group's first)."""
        return (self.steps - 1) * self.sp

    @property
    def finishing_rank(self) -> int:
        """The rank that runs the final stages: the decode rank, else the one holding the final latents."""
        return self.generating_ranks if self.decode else self.last_step_rank

    def text(self) -> str:
        split = [f"steps={self.steps}", *([f"sp={self.sp}"] if self.sp > 1 else [])] if self.steps > 1 else [f"sp={self.sp}", f"cfg={self.cfg}"]
        return ",".join([*split, *(f"{key}={size}" for key, size in self.extra), *(["decode"] if self.decode else [])])


def parse_parallel(text: str | None, nproc: int) -> ParallelLayout:
    """The layout of ``--parallel`` for ``nproc`` processes; none given: every rank computes everything (FSDP2 replicas)."""
    if not text:
        return ParallelLayout()
    values: dict[str, int] = {}
    decode = False
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, eq, value = part.partition("=")
        if key == "decode" and not eq:
            decode = True
            continue
        if (key not in KEYS and key not in registered()) or key == "decode" or not eq:
            installed = [name for name in registered() if name not in KEYS]
            also = f"; installed strategies: {', '.join(f'{name}=N' for name in installed)}" if installed else ""
            raise InputError(f"--parallel: unknown part {part!r}; use sp=S, cfg=C, steps=N and decode, joined by commas (e.g. {EXAMPLE}){also}")
        try:
            number = int(value)
        except ValueError:
            raise InputError(f"--parallel: {key} must be a whole number, got {value!r}") from None
        if number < 1:
            raise InputError(f"--parallel: {key} must be 1 or more, got {number}")
        values[key] = number
    extra = tuple((key, size) for key, size in values.items() if key not in KEYS)
    layout = ParallelLayout(values.get("sp", 1), values.get("cfg", 1), decode, values.get("steps", 1), extra)
    if layout.steps > 1 and layout.cfg > 1:
        raise InputError(f"--parallel {text}: steps=N does not combine with cfg; use steps=N[,sp=S][,decode]")
    if layout.processes != nproc:
        decode_rank = " + 1 decode rank" if decode else ""
        split = f"steps {layout.steps}" + (f" x sp {layout.sp}" if layout.sp > 1 else "") if layout.steps > 1 else f"sp {layout.sp} x cfg {layout.cfg}"
        split += "".join(f" x {key} {size}" for key, size in layout.extra)
        raise InputError(
            f"--parallel {text} needs {layout.processes} processes ({split}{decode_rank}), but --nproc is {nproc}; make them agree (e.g. --nproc {layout.processes})"
        )
    return layout
