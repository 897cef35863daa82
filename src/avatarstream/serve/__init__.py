"""HTTP / WebSocket session API: a thin shell over the same Pipeline API as the CLI (DESIGN.md §2).

``create_app(ServeSettings(...))`` builds the FastAPI app; ``avatarstream serve`` runs it with uvicorn.
Both names are imported on first use, so that the command line can check its settings without loading the models.
"""

from __future__ import annotations

import importlib

_PUBLIC = {"create_app": "avatarstream.serve.app", "ServeSettings": "avatarstream.serve.settings"}
__all__ = ["ServeSettings", "create_app"]  # the keys of _PUBLIC


def __getattr__(name: str) -> object:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'avatarstream.serve' has no attribute {name!r}")
    return getattr(importlib.import_module(_PUBLIC[name]), name)
