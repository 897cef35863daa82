"""LiveAvatar stages: audio features, block-causal generation, streaming decode."""
