"""``--device`` and ``--threads``: the same two options, with the same words, on every command that runs a model."""

from __future__ import annotations

import argparse

from avatarstream.runtime.names import DEVICE_CHOICES

THREADS_HELP = (
    "torch CPU threads (default: every core while the machine is quiet, one while another program competes for the cores, "
    "re-chosen between chunks; frames can then differ in the last bit with the load: give a number for bit-identical reruns; "
    "bench keeps every core throughout, so the runs it compares have the same count)"
)


COMPILE_HELP = (
    "torch.compile each DiT's transformer blocks (one graph per shape, made during the first chunks; the report's "
    "runtime.compile_s says how long): faster steady chunks, a slower first one. Not with sharded modules or --parallel sp"
)


def add_runtime_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", default="auto", help=f"where to run: {', '.join(DEVICE_CHOICES)} (CUDA when present) or cuda:N")
    p.add_argument("--threads", type=int, help=THREADS_HELP)


def add_compile_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--compile", action="store_true", help=COMPILE_HELP)


PARALLEL_HELP = (
    "how the --nproc processes split one session: sp=S splits each DiT forward's tokens (Ulysses), cfg=C its guidance "
    "predictions, decode adds a rank that decodes chunk k while chunk k+1 generates; S x C (+1 with decode) = --nproc "
    "(e.g. --nproc 4 --parallel sp=2,cfg=2). steps=N runs one denoising step of every block per rank (or per group of sp "
    "ranks), as a pipeline (for a model that declares its steps split: --nproc 5 --parallel steps=4,decode; --nproc 8 --parallel steps=4,sp=2). An installed package may add a strategy of its own, KEY=N (entry point "
    "avatarstream.parallel). Default: every process computes everything (what FSDP2 sharding alone needs)"
)


def add_parallel_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--parallel", metavar="sp=S,cfg=C[,decode] | steps=N[,sp=S][,decode]", help=PARALLEL_HELP)
