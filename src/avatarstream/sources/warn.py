"""Where a warning about an input being read goes: to whoever collects this context's warnings, else to stderr.

The code that reads an input (a reference image, an audio file) calls
``warn(text)``; ``input_warnings.collecting`` routes the text to a run's
warnings around the calls that read its inputs.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from contextvars import ContextVar

_collector: ContextVar[Callable[[str], None] | None] = ContextVar("avatarstream_warnings", default=None)


def warn(text: str) -> None:
    """A warning about an input being read now: to the collector of this context, else to stderr."""
    add = _collector.get()
    if add is None:
        print(f"warning: {text}", file=sys.stderr)
    else:
        add(text)


@contextlib.contextmanager
def warnings_to(add: Callable[[str], None]) -> Iterator[None]:
    """``warn`` calls ``add`` inside the block (on this thread)."""
    token = _collector.set(add)
    try:
        yield
    finally:
        _collector.reset(token)
