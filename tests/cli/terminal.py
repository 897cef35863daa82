"""Children that take Ctrl-C as a terminal gives it, whatever the test runner inherited.

A shell that starts a job in the background without job control (``cmd &`` in a script, nohup, some CI runners)
starts it with SIGINT ignored, and every child inherits that; Python then installs no KeyboardInterrupt handler. A test
that presses Ctrl-C in a child needs SIGINT's default disposition there, as an interactive terminal's job has it.
"""

from __future__ import annotations

import sys

#: Puts SIGINT back to its default, then becomes the command (exec keeps a default disposition, not an ignored one's).
_RESET_THEN_EXEC = "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])"


def as_in_a_terminal(command: list[str]) -> list[str]:
    """``command`` (its first item an executable's path), started with SIGINT's default disposition."""
    return [sys.executable, "-c", _RESET_THEN_EXEC, *command]
