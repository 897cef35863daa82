"""Names the command line lists in its choices and help (devices, residency policies), without loading torch."""

from __future__ import annotations

DEVICE_CHOICES = ("auto", "cpu", "cuda")
POLICY_NAMES = ("resident", "offloaded", "streamed", "sharded")
