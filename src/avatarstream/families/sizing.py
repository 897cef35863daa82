"""The sizing tables of docs/deployment.md: every family's memory model judged against the classes of GPU (computed).

python -m avatarstream.families.sizing   # the block docs/deployment.md carries between its sizing markers
"""

from __future__ import annotations

from avatarstream.families.infinitetalk import memory as infinitetalk
from avatarstream.families.liveavatar import memory as liveavatar
from avatarstream.models.liveavatar.config import S2VConfig
from avatarstream.weights import sizing
from avatarstream.weights.sizing import Configuration


def configurations() -> list[Configuration]:
    """InfiniteTalk (its presets share the weights), then LiveAvatar at the sizes of its memory table."""
    config, counts = S2VConfig.real(), liveavatar.real_weight_counts()
    return [infinitetalk.sizing(infinitetalk.real_weight_counts()), *(liveavatar.sizing(config, counts, size) for size in liveavatar.SIZES)]


def markdown() -> str:
    return sizing.markdown(configurations())


if __name__ == "__main__":
    print(markdown())
