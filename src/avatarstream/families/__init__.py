"""Model families: each assembles its modules and stages into a Pipeline.

A family is chosen by name (``--model``); the loop, chunk plan, memory
contract, runtime and publishing come from the framework.
"""

from __future__ import annotations

from avatarstream.errors import InputError
from avatarstream.families.demo import DemoFamily

FAMILIES: dict[str, type[DemoFamily]] = {"demo": DemoFamily}
VARIANTS: dict[str, tuple[str, str]] = {"demo": ("demo", "default"), "demo-tiny": ("demo", "tiny")}


def load_family(model: str, weights_dir: str | None = None, *, seed: int = 0) -> DemoFamily:
    """Build the named model (e.g. ``demo`` or ``demo-tiny``) with its modules loaded."""
    if model not in VARIANTS:
        raise InputError(f"unknown model {model!r}; choose one of: {', '.join(VARIANTS)}")
    family, variant = VARIANTS[model]
    return FAMILIES[family].load(variant, weights_dir, seed=seed)
