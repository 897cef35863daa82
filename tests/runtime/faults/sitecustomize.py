"""Test-only fault injection for the torchrun processes of test_parallel_failures.py (on PYTHONPATH there only).

With ``AVATARSTREAM_TEST_FAIL=RANK:WHAT:CALL`` the process of that rank raises
on the CALL-th call of WHAT: ``a2v`` (the demo A2V DiT's forward) or
``decode`` (the demo VAE's decode). Other processes are left alone.
"""

from __future__ import annotations

import os

_spec = os.environ.get("AVATARSTREAM_TEST_FAIL", "")
if _spec and _spec.split(":")[0] == os.environ.get("RANK"):
    from avatarstream.models.demo import A2VDiT, CausalVAE

    _rank, _what, _call = _spec.split(":")
    _cls, _name = (A2VDiT, "forward") if _what == "a2v" else (CausalVAE, "decode")
    _real = getattr(_cls, _name)
    _calls = [0]

    def _failing(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        _calls[0] += 1
        if _calls[0] >= int(_call):
            raise RuntimeError(f"injected fault in {_what} on rank {_rank}")
        return _real(self, *args, **kwargs)

    setattr(_cls, _name, _failing)
