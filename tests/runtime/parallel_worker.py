"""Run by test_parallel.py under torchrun (gloo): each layout's forward on every rank and rank 0's render, to files.

Usage: PYTHONPATH=tests/runtime torchrun --standalone --nproc-per-node N -m -- parallel_worker OUT_DIR WEIGHTS CASE...
where CASE is FAMILY:LAYOUT (demo:sp=2, infinitetalk:sp=2+cfg=2, liveavatar:steps=4+decode; '+' stands for ',').
One process group serves every case; each case makes the groups of its layout.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
from parallel_cases import counting_predictions, family, forward, pipeline, render
from safetensors.torch import save_file

from avatarstream.models.infinitetalk.predict import DiTPredictor
from avatarstream.models.liveavatar.dit import S2VDiT
from avatarstream.pipeline import run as run_module
from avatarstream.runtime.launch import finish, init_rank
from avatarstream.runtime.parallel import groups, stage_pipe
from avatarstream.runtime.parallel.groups import ParallelGroups
from avatarstream.runtime.parallel.layout import parse_parallel

COUNTS = {"all_to_all": 0, "all_gather": 0, "decoded": 0, "predictions": 0, "dit_forwards": 0}


def _counted(real, name: str):  # type: ignore[no-untyped-def]
    """``real``, counting its calls under ``name``."""

    def count(*args, **kwargs):  # type: ignore[no-untyped-def]
        COUNTS[name] += 1
        return real(*args, **kwargs)

    return count


def _guidance_gathers(real, joined: list[ParallelGroups]):  # type: ignore[no-untyped-def]
    """``real`` (dist.all_gather), counting the calls on the guidance group of the case's groups (the last ``joined``;
    sequence parallelism gathers on its own group)."""

    def count(*args, **kwargs):  # type: ignore[no-untyped-def]
        cfg_group = joined[-1].cfg_group
        COUNTS["all_gather"] += cfg_group is not None and kwargs.get("group") is cfg_group
        return real(*args, **kwargs)

    return count


def main(out: Path, weights: Path, cases: list[str]) -> None:
    dist.all_to_all_single = _counted(dist.all_to_all_single, "all_to_all")  # the test checks the split really ran
    joined: list[ParallelGroups] = []
    dist.all_gather = _guidance_gathers(dist.all_gather, joined)  # the guidance split gathered each step's predictions
    run_module.send_decoded = _counted(run_module.send_decoded, "decoded")  # and that the decode rank decoded
    stage_pipe.send_decoded = _counted(stage_pipe.send_decoded, "decoded")  # (or, under steps=N, the last step's rank)
    S2VDiT.forward = _counted(S2VDiT.forward, "dit_forwards")  # type: ignore[method-assign]  # the steps each rank ran
    DiTPredictor._forward = counting_predictions(COUNTS)  # type: ignore[method-assign]  # what each rank computed
    first_layout = cases[0].split(":")[1].replace("+", ",")
    info, _ = init_rank(torch.device("cpu"), first_layout)
    torch.set_num_threads(1)
    for index, case in enumerate(cases):
        name, layout = case.split(":")
        layout = layout.replace("+", ",")
        joined.append(groups.join(parse_parallel(layout, info.world_size), info.groups.control) if index else info.groups)  # type: ignore[arg-type]
        role = joined[-1].role
        fam = family(name, weights)
        built = pipeline(fam, name, joined[-1])
        before = dict(COUNTS)
        made = forward(fam, built) if role != "decode" else None
        if made is not None:
            save_file({"forward": made.contiguous()}, str(out / f"{case}.rank{info.rank}.safetensors"))
        if role == "lead":
            np.save(out / f"{case}.frames.npy", render(fam, built))
            joined[-1].control.shutdown()  # type: ignore[union-attr]
        else:
            built.follow()
        for counter, count in COUNTS.items():
            (out / f"{case}.rank{info.rank}.{counter}").write_text(str(count - before[counter]))
    finish(info)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:])
