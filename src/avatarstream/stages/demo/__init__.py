"""The demo family's stages: reference and text encoding, context, A2V, SR and the causal decode."""
