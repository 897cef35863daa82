"""The LiveAvatar family: Wan2.2-S2V-14B + LoRA, block-causal with per-step KV caches and an attention sink."""
