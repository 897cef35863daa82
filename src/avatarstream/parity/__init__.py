"""Numerical parity of a port against golden fixtures made with the reference implementation.

A golden set is a folder with ``golden.json`` (configs, tolerances), ``weights/``
(laid out as a user's download) and ``cases/`` (inputs and reference outputs).
This package is the toolkit a family's parity cases use (``fixture``: reading
a set; ``checks``: comparing tensors; ``video``: comparing a rendered video);
it knows no family. ``avatarstream.golden_sets`` runs a set with the family
that ports its reference implementation.
"""

from avatarstream.parity.checks import Check
from avatarstream.parity.fixture import GoldenSet

__all__ = ["Check", "GoldenSet"]
