"""Which reference the demo family renders: an image, a procedural identity (``--avatar``), or the bundled default."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from avatarstream.avatars.detect import looks_procedural
from avatarstream.avatars.identity import Identity
from avatarstream.avatars.renderer import reference_image
from avatarstream.errors import InputError
from avatarstream.sources.bundled import DEFAULT_REFERENCE
from avatarstream.sources.reference import load_reference_image, square_resize
from avatarstream.sources.warn import warn

PHOTO_NOTE = (
    "the reference is not a procedural avatar, and the bundled demo weights animate only those, the faces they were trained on "
    '(MODEL.md), not photographs: show one with --avatar SEED (on the server, model_options {"avatar": SEED}), or use a model trained on faces: '
    "--model infinitetalk --weights ROOT"
)


def choose_reference(reference: Path | None, avatar: int | None, size: int, *, shipped_weights: bool) -> np.ndarray:
    """uint8 RGB [size, size, 3] for ``--reference``, ``--avatar`` or the bundled default."""
    if reference is not None and avatar is not None:
        raise InputError("give either --reference IMAGE or --avatar SEED, not both")
    if avatar is not None:
        if avatar < 0:
            raise InputError(f"--avatar must be 0 or more, got {avatar}")
        return square_resize(Image.fromarray(reference_image(Identity.from_seed(avatar))), size)
    if reference is None:
        return load_reference_image(DEFAULT_REFERENCE, size)
    image = load_reference_image(reference, size)
    if shipped_weights and not looks_procedural(image):
        warn(PHOTO_NOTE)
    return image
