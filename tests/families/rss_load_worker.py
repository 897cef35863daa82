"""Run by test_infinitetalk_load_memory.py in a fresh process: load a DiT, read every weight, report peak RSS growth.

Usage: python rss_load_worker.py WEIGHTS_ROOT   (prints one JSON line)
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import torch

from avatarstream.components.wan.load_wav2vec2 import wav2vec2_config
from avatarstream.families.infinitetalk.layout import resolve
from avatarstream.families.infinitetalk.load_dit import dit_checkpoint, load_dit, read_adapter_config, read_dit_config
from avatarstream.models.infinitetalk.dit import InfiniteTalkDiT
from avatarstream.weights.meta_load import empty_weights


def _kib(field: str) -> int:
    return int(re.search(rf"^{field}:\s+(\d+) kB", Path("/proc/self/status").read_text(), re.MULTILINE).group(1))  # type: ignore[union-attr]


def main(root: Path) -> None:
    layout = resolve(root)
    audio = wav2vec2_config(layout.audio_encoder)
    adapter = read_adapter_config(layout.adapter, audio.num_hidden_layers, audio.hidden_size)
    with empty_weights():  # warm up the code paths (lazy imports) without holding any weights
        InfiniteTalkDiT(read_dit_config(layout.base, layout.layout, dit_checkpoint(layout.base, layout.layout)), adapter)
    Path("/proc/self/clear_refs").write_text("5")  # reset the peak (VmHWM) to the current RSS
    before = _kib("VmRSS")
    network = load_dit(layout.base, layout.layout, layout.adapter, adapter, torch.float32)
    for tensor in network.state_dict().values():  # read every weight once, as a forward does (shards may be memory-mapped)
        tensor.sum()
    peak = _kib("VmHWM")
    model = sum(t.numel() * t.element_size() for t in network.state_dict().values())
    print(json.dumps({"before": before * 1024, "peak": peak * 1024, "model": model}))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
