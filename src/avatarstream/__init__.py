"""avatarstream: real-time, audio-driven avatar video, chunk by chunk, with constant memory.

``avatarstream.render(...)`` is the one-call API (docs/python-api.md);
``avatarstream.load_family`` loads a model once for many renders or for
``Pipeline.stream``.
"""

import os as _os
import sys as _sys

#: OpenMP read its wait policy when torch loaded, before this package could set it: idle workers spin
#: (runtime/cpu_threads.py corrects what it can when a run starts, and says how to avoid it).
omp_policy_came_too_late = "torch" in _sys.modules and "OMP_WAIT_POLICY" not in _os.environ
# Before anything imports torch (and with it OpenMP): idle OpenMP workers sleep instead of
# spinning, which made renders ~8x slower next to any other job (runtime/cpu_threads.py).
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

_PUBLIC = {
    "render": "avatarstream.api",
    "RenderResult": "avatarstream.api",
    "load_family": "avatarstream.families.registry",
    "FamilyOptions": "avatarstream.families.options",
    "Outputs": "avatarstream.publish.outputs",
}
__all__ = ["FamilyOptions", "Outputs", "RenderResult", "load_family", "render"]  # the keys of _PUBLIC


def __getattr__(name: str) -> object:
    """The public names, imported on first use (``import avatarstream.publish`` alone must not load torch)."""
    if name not in _PUBLIC:
        raise AttributeError(f"module 'avatarstream' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_PUBLIC[name]), name)
