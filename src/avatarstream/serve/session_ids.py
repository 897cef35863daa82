"""Session and job ids: unguessable (they are the capability to a session's media) and safe to type in a shell."""

from __future__ import annotations

import secrets

ID_BYTES = 18  # 144 random bits, 24 URL-safe characters


def new_session_id() -> str:
    """A fresh id that starts with a letter or a digit: an id that starts with ``-`` reads as an option to ``ls``, ``rm``
    or ``curl -o``, and one that starts with ``_`` or ``-`` breaks shell globs like ``$ID*.mp4``."""
    while True:
        sid = secrets.token_urlsafe(ID_BYTES)
        if sid[0].isalnum():
            return sid
