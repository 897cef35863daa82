"""Thread settings do not depend on import order: with torch imported first, a run corrects what it can and says so once."""

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
from avatarstream.families.registry import load_family
from avatarstream.sources.pcm import PcmBlock
family = load_family("demo-tiny")
pipeline = family.build(torch.device("cpu"), {{"chunk_frames": 6, "interp_frames": 0}})
for _ in range(2):  # two runs: one warning
    for _ in pipeline.stream([PcmBlock(np.zeros((1, 8000), np.float32), 16000)], family.reference(None)):
        pass
from avatarstream.runtime.cpu_threads import cpu_report
print(json.dumps(cpu_report()))
"""
ORDERS = {
    "torch first": "import torch\nimport avatarstream",
    "avatarstream first": "import avatarstream\nimport torch",
    "torch first, threads chosen": "import torch\nimport avatarstream\nfrom avatarstream.runtime.cpu_threads import set_threads\nset_threads(2)",
}


def _run(first: str, tmp_path: Path) -> tuple[dict, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}  # as a user's shell has it
    done = subprocess.run([sys.executable, "-c", RUN.format(first=first)], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: one thread either way")
@pytest.mark.parametrize("order", list(ORDERS))
def test_a_run_corrects_spinning_threads_whatever_was_imported_first(order: str, tmp_path: Path) -> None:
    cpu, stderr = _run(ORDERS[order], tmp_path)
    warnings = stderr.count("warning: torch was imported before avatarstream")
    if order == "torch first":
        assert cpu["omp_policy_came_too_late"] is True and cpu["threads"] == 1 and warnings == 1, (cpu, stderr)
        assert "import avatarstream before torch, or set OMP_WAIT_POLICY=PASSIVE" in stderr
    elif order == "avatarstream first":
        assert cpu["omp_policy_came_too_late"] is False and cpu["threads"] == cpu["cores"] and warnings == 0, (cpu, stderr)
    else:  # the user's own thread count stands
        assert cpu["omp_policy_came_too_late"] is True and cpu["threads"] == 2 and warnings == 0, (cpu, stderr)
