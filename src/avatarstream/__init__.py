"""avatarstream: real-time, audio-driven avatar video, chunk by chunk, with constant memory.

``avatarstream.render(...)`` is the one-call API (docs/python-api.md);
``avatarstream.load_family`` loads a model once for many renders, and
``avatarstream.build_pipeline`` builds its pipeline for ``Pipeline.stream``.
"""

_PUBLIC = {
    "render": "avatarstream.api",
    "RenderResult": "avatarstream.api",
    "load_family": "avatarstream.families.registry",
    "build_pipeline": "avatarstream.families.assemble",
    "FamilyOptions": "avatarstream.families.options",
    "Outputs": "avatarstream.publish.outputs",
}
__all__ = ["FamilyOptions", "Outputs", "RenderResult", "build_pipeline", "load_family", "render"]  # the keys of _PUBLIC


def __getattr__(name: str) -> object:
    """The public names, imported on first use (``import avatarstream.publish`` alone must not load torch)."""
    if name not in _PUBLIC:
        raise AttributeError(f"module 'avatarstream' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_PUBLIC[name]), name)
