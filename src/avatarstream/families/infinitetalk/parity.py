"""The InfiniteTalk family's golden cases: every case of a set against the networks loaded from its ``weights/`` folder."""

from __future__ import annotations

from collections.abc import Callable

import torch

from avatarstream.errors import InputError
from avatarstream.families.infinitetalk.layout import resolve
from avatarstream.families.infinitetalk.networks import InfiniteTalkNetworks
from avatarstream.parity.cases import CASES
from avatarstream.parity.checks import Check
from avatarstream.parity.fixture import GoldenSet


def run_cases(gs: GoldenSet, on_case: Callable[[str], None]) -> list[Check]:
    """Load ``weights/`` in float32 on the CPU (as the fixtures were made) and run each case."""
    unknown = [name for name in gs.cases() if name not in CASES]
    if unknown:
        raise InputError(f"{gs.root / 'golden.json'} has cases this version cannot run: {', '.join(unknown)}; known cases: {', '.join(CASES)}")
    networks = InfiniteTalkNetworks.load(resolve(gs.weights), torch.float32, encoders=False)
    checks: list[Check] = []
    with torch.inference_mode():
        for name in gs.cases():
            on_case(name)
            checks += CASES[name](gs, networks)
    return checks
