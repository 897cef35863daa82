"""Encoder backends behind one interface; ``create_encoder`` picks one by name."""

from __future__ import annotations

from avatarstream.publish.encoders.base import Encoder
from avatarstream.publish.settings import EncoderSettings

BACKENDS = ("pyav", "gstreamer")


def create_encoder(name: str, settings: EncoderSettings) -> Encoder:
    """Start the named backend; GStreamer is imported only when asked for."""
    if name == "pyav":
        from avatarstream.publish.encoders.pyav import PyAvEncoder

        return PyAvEncoder(settings)
    if name == "gstreamer":
        from avatarstream.publish.encoders.gstreamer import GstEncoder

        return GstEncoder(settings)
    raise ValueError(f"unknown encoder {name!r}; use one of {BACKENDS}")


__all__ = ["BACKENDS", "Encoder", "create_encoder"]
