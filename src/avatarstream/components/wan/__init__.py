"""What the Wan-based families share: the Wan 2.1 VAE, the UMT5 text encoder, wav2vec2 reading, the download layout of
these files, their loaders, their tiny random checkpoints, and the VAE's timeline (``frames``).

Each family keeps only what is its own (its DiT, its adapter or LoRA, its folders and presets). The modules
of pure model code (``config``, ``vae``, ``text_encoder``, ``color_match``) import nothing from the framework;
the loaders and tiny writers read and write files through ``avatarstream.weights``. The causal decode stage they
share is a stage, so it lives with the stages (``stages/wan_decode.py``).
"""
