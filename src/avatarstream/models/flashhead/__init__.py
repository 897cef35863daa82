"""SoulX-FlashHead's pure model code: the audio DiT and its adapter, RoPE, the re-noising sampler, Lab colour correction and the audio windows."""
