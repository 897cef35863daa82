"""Runtime tests run torch on one thread.

Their models are tiny, so extra threads only add contention on a shared
machine, and one thread matches the torchrun workers of the FSDP test, whose
frames must equal a single process's bit for bit (thread count changes the
order of float sums).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch


@pytest.fixture(autouse=True, scope="module")
def one_thread() -> Iterator[None]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
