"""The SoulX-FlashHead family: a 1.3B audio DiT on Wan blocks, 4 re-noising steps per chunk, Pro (Wan VAE) or Lite (LTX VAE)."""
