"""Run by test_fsdp.py under torchrun (2 gloo processes): sharded forwards and a sharded pipeline, outputs to files.

Usage: PYTHONPATH=tests/runtime torchrun --standalone --nproc-per-node 2 -m -- fsdp_worker OUT_DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch
from helpers import deep_pipeline, dit_cases, render
from safetensors.torch import save_file

from avatarstream.runtime.launch import finish, init_rank
from avatarstream.runtime.sharding import shard_network


def main(out: Path) -> None:
    info, device = init_rank(torch.device("cpu"))
    outputs = {}
    for name, (module, inputs) in dit_cases().items():
        shard_network(module.network, device, offload=True)
        with torch.inference_mode():
            outputs[name] = torch.cat([module.network(*inputs) for _ in range(2)])  # twice: resharded weights gather again
    save_file(outputs, str(out / f"dits.rank{info.rank}.safetensors"))
    pipeline = deep_pipeline({"a2v_dit": "sharded", "sr_dit": "sharded:offload"}, parallel=info.groups)
    if info.publishes:
        np.save(out / "frames.npy", render(pipeline))
        (out / "runtime.txt").write_text(
            f"{pipeline.runtime.summary()['policies']} sequential_only={pipeline.runtime.sequential_only} collective_finals={pipeline.collective_finals}"
        )
    else:
        pipeline.prepare()
        pipeline.follow()  # rank 1 runs rank 0's request with it: the sharded modules need both
    finish(info)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
