"""User-facing errors: each names the problem and what to do about it.

The CLI and the server print ``str(error)`` as-is, so messages are written for
people, not for debuggers. ``exit_code`` separates bad input (2) from failures
during a run (1).
"""

from __future__ import annotations


class AvatarStreamError(Exception):
    """Base class for every error the framework raises on purpose."""

    exit_code: int = 1


class InputError(AvatarStreamError):
    """The user gave something we cannot use (file, option value, path)."""

    exit_code = 2


class PipelineGraphError(AvatarStreamError):
    """The stage graph is inconsistent; raised when the pipeline is built."""


class PublishError(AvatarStreamError):
    """An output could not be written or finalized."""
