"""Every fuzz target by name, and the module that defines it (imported only when a target of it runs: a fuzzing process
instruments what it imports, and a target's module pulls in what it parses with)."""

from __future__ import annotations

import importlib

from fuzz.target import Target

WHERE = {
    "demo-config": "weights_configs",
    "dit-config": "weights_configs",
    "dit-config-diffusers": "weights_configs",
    "wav2vec2-config": "weights_configs",
    "vae-config": "weights_configs",
    "umt5-config": "weights_configs",
    "clip-config": "weights_configs",
    "s2v-config": "weights_configs",
    "wav2vec2-processor": "weights_configs",
    "safetensors-index": "weights_files",
    "safetensors": "weights_files",
    "pth": "weights_files",
    "audio": "media",
    "reference-image": "media",
    "audio-socket": "audio_socket",
    "multipart": "forms",
}


def load(name: str) -> Target:
    module = importlib.import_module(f"fuzz.targets.{WHERE[name]}")
    return next(t for t in module.TARGETS if t.name == name)
