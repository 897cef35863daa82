"""Run by test_infinitetalk_residency.py under torchrun (2 gloo processes): the tiny DiT under FSDP2.

Usage: PYTHONPATH=tests/families torchrun --standalone --nproc-per-node 2 -m -- infinitetalk_sharded_worker OUT_DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from infinitetalk_policy_cases import load, run
from safetensors.torch import save_file

from avatarstream.runtime.launch import finish, init_rank


def main(out: Path) -> None:
    info, _ = init_rank(torch.device("cpu"))
    torch.set_num_threads(1)
    outputs = {"sharded": run(load(), "dit", "sharded"), "sharded_offload": run(load(), "dit", "sharded:offload")}
    save_file(outputs, str(out / f"dit.rank{info.rank}.safetensors"))
    finish(info)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
