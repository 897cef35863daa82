"""Live preview: a local page that plays the stream while it is generated."""

from avatarstream.publish.preview.server import DEFAULT_HOST, DEFAULT_PORT, PreviewServer

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "PreviewServer"]
