"""Init stage: encode the text / scene prompt once per request."""

from __future__ import annotations

from avatarstream.models.demo import TextEncoder
from avatarstream.pipeline.stage import Stage
from avatarstream.pipeline.state import StageContext
from avatarstream.runtime.module import Module


class TextEncodeStage(Stage):
    name = "text_encode"
    phase = "init"
    reads = ("prompt",)
    writes = ("text_tokens",)

    def __init__(self, text_encoder: Module) -> None:
        self.text_encoder = text_encoder

    def modules(self) -> tuple[Module, ...]:
        return (self.text_encoder,)

    def run(self, ctx: StageContext) -> None:
        network = self.text_encoder.network_as(TextEncoder)
        device = next(network.parameters()).device
        ctx["text_tokens"] = network(network.tokenize(ctx["prompt"]).to(device))
