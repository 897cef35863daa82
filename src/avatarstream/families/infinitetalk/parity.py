"""The InfiniteTalk family's golden cases: every case of a set against the networks loaded from its ``weights/`` folder."""

from __future__ import annotations

from collections.abc import Callable

import torch

from avatarstream.families.infinitetalk.layout import resolve
from avatarstream.families.infinitetalk.networks import InfiniteTalkNetworks
from avatarstream.parity.cases import CASES
from avatarstream.parity.checks import Check
from avatarstream.parity.fixture import GoldenSet, run_each


def run_cases(gs: GoldenSet, on_case: Callable[[str], None]) -> list[Check]:
    """Load ``weights/`` in float32 on the CPU (as the fixtures were made) and run each case."""
    return run_each(gs, CASES, lambda: InfiniteTalkNetworks.load(resolve(gs.weights), torch.float32, encoders=False), on_case)
