"""Thread settings do not depend on import order: with torch imported first or last, a run follows the machine the same way."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

RUN = """
import json, sys
{first}
import numpy as np
from avatarstream.families.assemble import build_pipeline
from avatarstream.families.registry import load_family
from avatarstream.sources.pcm import PcmBlock
family = load_family("demo-tiny")
pipeline = build_pipeline(family, torch.device("cpu"), {{"chunk_frames": 6, "interp_frames": 0}})
for _ in pipeline.stream([PcmBlock(np.zeros((1, 8000), np.float32), 16000)], family.reference(None)):
    pass
from avatarstream.runtime.cpu_threads import cpu_report
print(json.dumps(cpu_report()))
"""
ORDERS = {
    "torch first": "import torch\nimport avatarstream",
    "avatarstream first": "import avatarstream\nimport torch",
    "threads chosen": "import torch\nimport avatarstream\nfrom avatarstream.runtime.cpu_threads import set_threads\nset_threads(2)",
}


def _run(first: str, tmp_path: Path) -> tuple[dict, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_NUM_THREADS")}  # as a user's shell has it
    done = subprocess.run([sys.executable, "-c", RUN.format(first=first)], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: one thread either way")
@pytest.mark.parametrize("order", list(ORDERS))
def test_a_run_follows_the_machine_whatever_was_imported_first(order: str, tmp_path: Path) -> None:
    cpu, stderr = _run(ORDERS[order], tmp_path)
    assert cpu["omp_wait_policy"] is None and "warning" not in stderr, (cpu, stderr)  # OpenMP keeps its own policy: nothing to be late for
    if order == "threads chosen":  # the user's own thread count stands
        assert cpu["threads"] == 2 and cpu["follows_machine"] is None, cpu
    else:  # a run looked at the machine, and ended on the count it started with
        assert cpu["follows_machine"] is not None and cpu["threads"] == cpu["cores"], cpu
