"""The sizing tables of docs/deployment.md: every family's memory model judged against the classes of GPU (computed).

python -m avatarstream.families.sizing   # the block docs/deployment.md carries between its sizing markers
"""

from __future__ import annotations

from avatarstream.families.infinitetalk import memory as infinitetalk
from avatarstream.families.liveavatar import memory as liveavatar
from avatarstream.models.liveavatar.config import S2VConfig
from avatarstream.weights import sizing
from avatarstream.weights.sizing import Configuration

#: The ``--quantize`` modes the tables size beside bf16 (LiveAvatar's fp8 with fp8 KV caches too).
MODES = ("int8", "fp8")


def configurations() -> list[Configuration]:
    """InfiniteTalk (its presets share the weights), then LiveAvatar at the sizes of its memory table, in bf16; then the
    same quantized, mode by mode."""
    config, counts, it_counts = S2VConfig.real(), liveavatar.real_weight_counts(), infinitetalk.real_weight_counts()
    found = []
    for mode in (None, *MODES):
        found += [infinitetalk.sizing(it_counts, mode=mode), *(liveavatar.sizing(config, counts, size, mode=mode) for size in liveavatar.SIZES)]
    return found


def markdown() -> str:
    return sizing.markdown(configurations())


if __name__ == "__main__":
    print(markdown())
