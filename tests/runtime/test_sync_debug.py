"""The GPU scripts' --sync-debug switch: CUDA's sync debug mode on from the first stretch, lifted for allowed reads, put
back at the end; on a CPU a no-op that says so. CUDA's own calls are replaced by a recorder here (no GPU)."""

from __future__ import annotations

import pytest
import torch

from avatarstream.runtime.host_reads import host_read
from avatarstream.runtime.sync_debug import steady_sync_debug


def test_on_a_cpu_it_changes_nothing_and_says_so() -> None:
    said: list[str] = []
    with steady_sync_debug(torch.device("cpu"), "error", said.append) as lines, host_read("frames"):
        pass
    assert len(said) == 1 and "no-op on cpu" in said[0] and not lines
    with steady_sync_debug(torch.device("cpu"), "off", said.append):
        pass
    assert len(said) == 1
    with pytest.raises(ValueError, match="choose one of"), steady_sync_debug(torch.device("cpu"), "loud"):
        pass


def test_on_cuda_the_steady_state_runs_under_the_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    modes: list[int | str] = []
    monkeypatch.setattr(torch.cuda, "get_sync_debug_mode", lambda: 1)  # what the script set before: warn
    monkeypatch.setattr(torch.cuda, "set_sync_debug_mode", modes.append)
    with steady_sync_debug(torch.device("cuda"), "error"):
        assert modes == [], "the init stages and the first chunks may sync"
        with host_read("frames"):  # the first stretch's frames: the steady state starts once they are read
            pass
        assert modes == ["error"]
        with host_read("frames"):
            assert modes == ["error", 1], "an allowed read runs under the mode found"
        assert modes == ["error", 1, "error"]
    assert modes == ["error", 1, "error", 1], "the mode found is put back"
