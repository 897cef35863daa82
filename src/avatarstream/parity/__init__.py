"""Numerical parity of a port against golden fixtures made with the reference implementation.

A golden set is a folder with ``golden.json`` (configs, tolerances), ``weights/``
(laid out as a user's download) and ``cases/`` (inputs and reference outputs).
``run_golden_set`` runs every case it describes and returns one ``Check`` per
compared tensor; a whole-video set (the reference CLI's command and settings)
is rendered through ``avatarstream.render`` and its frames checked by the set's
tolerances (``parity.video``).
"""

from avatarstream.parity.checks import Check
from avatarstream.parity.runner import run_golden_set

__all__ = ["Check", "run_golden_set"]
