"""Shard-by-shard loading: peak host memory while loading stays below the model plus its largest shard."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from avatarstream.families.infinitetalk.tiny import write_dit
from avatarstream.models.infinitetalk.config import AdapterConfig, DiTConfig, InfiniteTalkConfig

HERE = Path(__file__).parent
#: Big enough (about 190 MB in float32) that the model, not the interpreter, dominates the measurement.
MEDIUM = InfiniteTalkConfig(
    dit=DiTConfig(dim=512, num_heads=8, num_layers=8, ffn_dim=2048, text_dim=64, clip_dim=64),
    adapter=AdapterConfig(blocks=2, channels=32, intermediate_dim=64, output_dim=64, context_tokens=8),
)
SHARDS = 4


@pytest.fixture(scope="module")
def medium_checkpoint(tmp_path_factory: pytest.TempPathFactory, golden_dir: Path) -> Path:
    root = tmp_path_factory.mktemp("medium")
    base = root / "Wan2.1-I2V-14B-480P"
    base.mkdir()
    write_dit(base, root / "InfiniteTalk" / "single" / "infinitetalk.safetensors", "original", MEDIUM, seed=0, shards=SHARDS)
    audio = root / "chinese-wav2vec2-base"
    audio.mkdir()
    (audio / "config.json").write_text((golden_dir / "weights" / "chinese-wav2vec2-base" / "config.json").read_text())
    return root


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux /proc to reset the peak RSS")
def test_peak_rss_while_loading_is_below_model_plus_largest_shard(medium_checkpoint: Path) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, str(HERE / "rss_load_worker.py"), str(medium_checkpoint)], check=False, capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    shards = sorted(medium_checkpoint.glob("Wan2.1-I2V-14B-480P/*.safetensors"))
    assert len(shards) == SHARDS
    largest = max(p.stat().st_size for p in shards)
    grown = figures["peak"] - figures["before"]
    assert figures["model"] > 150e6
    assert grown < figures["model"] + largest, (
        f"loading grew RSS by {grown / 1e6:.0f} MB; model {figures['model'] / 1e6:.0f} MB + largest shard {largest / 1e6:.0f} MB"
    )
    assert grown > 0.9 * figures["model"]  # the measurement sees the weights arrive
