"""A module belongs to one runtime: a pipeline built later over the same loaded model takes its modules for good, and the
earlier pipeline says so in one error instead of taking them back mid-run; pipelines that run at once share a runtime."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch
from helpers import request

from avatarstream.errors import InputError
from avatarstream.families.assemble import build_pipeline, build_sibling_pipeline
from avatarstream.families.registry import load_family
from avatarstream.pipeline.pipeline import Pipeline
from avatarstream.runtime.cpu_threads import set_threads


def _frames(pipeline: Pipeline, seconds: float = 1.0) -> np.ndarray:
    return np.concatenate([c.frames for c in request(pipeline, seconds=seconds)])


def test_a_pipeline_whose_modules_were_taken_over_refuses_to_run() -> None:
    family = load_family("demo-tiny")
    first = build_pipeline(family, torch.device("cpu"))
    later = build_pipeline(family, torch.device("cpu"))
    assert _frames(later).shape[0] == 25
    with pytest.raises(InputError, match=r"was taken over by a pipeline built later.*build it again.*build_sibling_pipeline"):
        _frames(first)
    again = build_pipeline(family, torch.device("cpu"))  # building again takes them back
    np.testing.assert_array_equal(_frames(again), _frames(again))


def test_siblings_run_at_once_on_one_runtime() -> None:
    """Two pipelines of other chunk lengths over one model, run on two threads at once, each as it runs alone."""
    set_threads(None, follow_machine=False)  # bit-identical runs: a thread count that follows the load could change the last bits
    family = load_family("demo-tiny")
    shared = build_pipeline(family, torch.device("cpu"), {"chunk_frames": 6, "interp_frames": 2})
    sibling = build_sibling_pipeline(family, shared, {"chunk_frames": 10, "interp_frames": 0})
    assert sibling.runtime is shared.runtime
    alone = [_frames(p, 3.0) for p in (shared, sibling)]
    together: dict[int, np.ndarray] = {}
    threads = [threading.Thread(target=lambda i=i, p=p: together.__setitem__(i, _frames(p, 3.0))) for i, p in enumerate((shared, sibling))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not any(t.is_alive() for t in threads), "the two runs finished"
    for i in range(2):
        np.testing.assert_array_equal(together[i], alone[i])
