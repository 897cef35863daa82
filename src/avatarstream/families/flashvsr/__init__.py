"""The FlashVSR upscaler: one-step streaming diffusion video super-resolution (Wan2.1-T2V-1.3B, LQ projection, TCDecoder or Wan VAE)."""
