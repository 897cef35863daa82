"""Final stage: a chunk's new frames (decoded and colour-corrected by the chunk stage) to uint8, truncated as the reference saves them."""

from __future__ import annotations

from avatarstream.models.flashhead.color import to_uint8
from avatarstream.pipeline.stage import Stage
from avatarstream.pipeline.state import StageContext


class FlashHeadFramesStage(Stage):
    """The loop hands final stages its ``latents``: for FlashHead, the pixels [1, 3, frames, H, W] the chunk stage made."""

    name = "frames"
    phase = "final"
    reads = ("latents",)
    writes = ("frames",)

    def run(self, ctx: StageContext) -> None:
        ctx["frames"] = to_uint8(ctx["latents"])
