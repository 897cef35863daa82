"""HTTP / WebSocket session API: a thin shell over the same Pipeline API as the CLI (DESIGN.md §2).

``create_app(ServeSettings(...))`` builds the FastAPI app; ``avatarstream serve`` runs it with uvicorn.
"""

from avatarstream.serve.app import create_app
from avatarstream.serve.settings import ServeSettings

__all__ = ["ServeSettings", "create_app"]
