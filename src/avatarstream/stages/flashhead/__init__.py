"""FlashHead stages: the reference image's pixels, each chunk's audio windows, the chunk itself (DiT, decode, colour, motion), frames."""
