"""Init stage: the reference image as the pixels FlashHead conditions on and matches colours to.

The image comes already covered and cropped to the frame (the family's
``reference``); here it becomes (x / 255 - 0.5) x 2, [1, 3, 1, H, W], as the
reference computes ``cond_image``. It stays on the host: the chunk stage moves
it to its device once per session.
"""

from __future__ import annotations

import numpy as np
import torch

from avatarstream.pipeline.stage import Stage
from avatarstream.pipeline.state import StageContext


def reference_pixels(image: np.ndarray) -> torch.Tensor:
    """uint8 RGB [H, W, 3] -> float32 [1, 3, 1, H, W] in [-1, 1]."""
    pixels = torch.from_numpy(np.array(image, dtype=np.uint8)).permute(2, 0, 1).float()
    return ((pixels / 255 - 0.5) * 2)[None, :, None]


class FlashHeadReferenceStage(Stage):
    name = "reference_pixels"
    phase = "init"
    reads = ("reference_image",)
    writes = ("reference_pixels",)

    def run(self, ctx: StageContext) -> None:
        ctx["reference_pixels"] = reference_pixels(ctx["reference_image"])
