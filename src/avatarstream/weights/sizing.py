"""Which GPUs a model fits: classes of GPU, a headroom rule, and the sizing tables of docs/deployment.md.

A family's memory module describes its ways to run as ``Option``s (processes, ``--parallel``, ``--residency``, and
what one GPU holds, part by part, in GiB, computed from its config); this module judges them against the classes of
GPU and writes the tables. It knows no family: families import it, never the other way round.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import groupby

GIB = 2**30
#: Share of a GPU kept free for what the memory models do not count: activations, the CUDA context, allocator slack.
HEADROOM = 0.10

Part = tuple[str, float]  # (what, GiB on one GPU)


@dataclass(frozen=True)
class GpuClass:
    """GPUs sold as ``name``; ``capacity_gib``: what torch reports as the total memory of the class's smallest common card."""

    name: str
    capacity_gib: float
    cards: str

    @property
    def budget_gib(self) -> float:
        return self.capacity_gib * (1 - HEADROOM)


#: torch's total memory (``torch.cuda.get_device_properties(0).total_memory``, the "total capacity" of its out-of-memory
#: message) as public bug reports quote it, rounded down; not measured here.
GPU_CLASSES = (
    GpuClass("24 GB", 21.9, "L4, A10 (an RTX 4090 reports 23.6 GiB)"),
    GpuClass("48 GB", 44.3, "L40S, A40"),
    GpuClass("80 GB", 79.1, "H100, H800, A100 80 GB"),
    GpuClass("141 GB", 139.7, "H200"),
)


@dataclass(frozen=True)
class Option:
    """One way to run a model and what each of its GPUs holds.

    ``weights`` stay on the device for the whole session; ``caches`` exist from the first chunk on; ``visits`` are
    offloaded networks that come in for a moment at session start, before any cache: the peak is the larger moment.
    """

    gpus: int
    parallel: str  # the --parallel text, "" for one process
    residency: str  # the --residency text
    weights: tuple[Part, ...]
    caches: tuple[Part, ...] = ()
    visits: tuple[Part, ...] = ()
    note: str = ""
    flags: str = ""  # the model's own options this way needs (how its weights and caches are held), "" for none

    @property
    def at_start_gib(self) -> float:
        return sum(gib for _, gib in self.weights) + max((gib for _, gib in self.visits), default=0.0)

    @property
    def in_loop_gib(self) -> float:
        return sum(gib for _, gib in (*self.weights, *self.caches))

    @property
    def need_gib(self) -> float:
        """The most one GPU holds at any moment of a session (activations not counted)."""
        return max(self.at_start_gib, self.in_loop_gib)

    @property
    def command(self) -> str:
        layout = f"--nproc {self.gpus} --parallel {self.parallel} " if self.parallel else ""
        return f"{layout}--residency {self.residency}" + (f" {self.flags}" if self.flags else "")

    def arithmetic(self) -> str:
        """``DiT 35.2 + text encoder 10.6 = **45.8**``, and the session start when a visiting network makes it the peak."""
        loop = " + ".join(f"{what} {gib:.1f}" for what, gib in (*self.weights, *self.caches))
        if self.at_start_gib <= self.in_loop_gib:
            return f"{loop} = **{self.in_loop_gib:.1f}**"
        visitor, gib = max(self.visits, key=lambda part: part[1])
        return f"{loop} = {self.in_loop_gib:.1f}; at session start the weights and {visitor} {gib:.1f}: **{self.at_start_gib:.1f}**"


@dataclass(frozen=True)
class Configuration:
    """A model at one setting (a preset, a size) with its weights (and caches) held one way, and its ways to run, most
    preferred first. ``weights``: how they are held, as the tables say it (``bf16``, ``int8``, ...)."""

    family: str
    name: str
    options: tuple[Option, ...]
    weights: str = "bf16"


def verdict(option: Option, gpu: GpuClass) -> str:
    """``fits`` within the budget, ``tight`` inside the card but into the headroom, ``no`` past the card."""
    need = option.need_gib
    return "fits" if need <= gpu.budget_gib else "tight" if need <= gpu.capacity_gib else "no"


def choose(options: Sequence[Option], gpu: GpuClass, *, several: bool) -> Option | None:
    """The first option (of one GPU, or of several) that fits; else the first tight one; else None."""
    mine = [o for o in options if (o.gpus > 1) == several]
    return next((o for o in mine if verdict(o, gpu) == "fits"), None) or next((o for o in mine if verdict(o, gpu) == "tight"), None)


def _cell(options: Sequence[Option], gpu: GpuClass, *, several: bool) -> str:
    option = choose(options, gpu, several=several)
    if option is None:
        least = min((o for o in options if (o.gpus > 1) == several), key=lambda o: o.need_gib)
        return f"none: the least is {least.need_gib:.1f} GiB per GPU (`{least.command}`)"
    left = gpu.capacity_gib - option.need_gib
    word = "fits" if verdict(option, gpu) == "fits" else "*tight*"
    return f"`{option.command}`: {option.need_gib:.1f} GiB per GPU, {word} ({left:.1f} left)"


def answer_table(configurations: Sequence[Configuration]) -> str:
    """Per configuration and class of GPU: what to run on one GPU and on several."""
    lines = ["| model | weights | GPU class (torch's total) | one GPU | several GPUs |", "|---|---|---|---|---|"]
    names = list(dict.fromkeys(c.name for c in configurations))
    for configuration in sorted(configurations, key=lambda c: names.index(c.name)):  # a model's ways to hold its weights together
        for gpu in GPU_CLASSES:
            cells = (_cell(configuration.options, gpu, several=several) for several in (False, True))
            row = f"| {configuration.name} | {configuration.weights} | {gpu.name} ({gpu.capacity_gib:.1f} GiB) | "
            lines.append(row + " | ".join(cells) + " |")
    return "\n".join(lines)


def options_table(configurations: Sequence[Configuration]) -> str:
    """Every option of one family's configurations (the same options at each), with its arithmetic per configuration."""
    first = configurations[0]
    assert all([o.command for o in c.options] == [o.command for o in first.options] for c in configurations), "one option list per family"
    notes = any(o.note for o in first.options)
    header = ["GPUs", "`--parallel`", "`--residency`", *(c.name for c in configurations), *(["note"] if notes else [])]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for i, option in enumerate(first.options):
        cells = [str(option.gpus), f"`{option.parallel}`" if option.parallel else "—", f"`{option.residency}`"]
        cells += [c.options[i].arithmetic() for c in configurations] + ([option.note] if notes else [])
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def classes_table() -> str:
    """The classes of GPU, their capacity, headroom and what is left to count against."""
    lines = ["| GPU class (as sold) | torch's total | headroom | budget | cards |", "|---|---:|---:|---:|---|"]
    for gpu in GPU_CLASSES:
        lines.append(f"| {gpu.name} | {gpu.capacity_gib:.1f} GiB | {gpu.capacity_gib - gpu.budget_gib:.1f} GiB | {gpu.budget_gib:.1f} GiB | {gpu.cards} |")
    return "\n".join(lines)


def markdown(configurations: Sequence[Configuration]) -> str:
    """The sizing block of docs/deployment.md: the classes, the answer, then each family's options with their arithmetic."""
    parts = [classes_table(), answer_table(configurations)]
    for (family, weights), group in groupby(configurations, key=lambda c: (c.family, c.weights)):
        parts.append(f"`{family}`, {weights}, GiB on each GPU (computed):\n\n" + options_table(list(group)))
    return "\n\n".join(parts)
