"""The whole training recipe end to end, in its quick form: every stage runs, and the result loads as a family."""

from __future__ import annotations

import json

import pytest
import torch

from avatarstream.avatars.speech import espeak_available
from avatarstream.families.demo import DemoFamily
from avatarstream.models.demo import DemoConfig
from avatarstream.training.recipe import STAGES, Recipe, run


@pytest.mark.skipif(not espeak_available(), reason="espeak-ng not installed (scripts/system-deps.sh installs it)")
def test_quick_recipe_writes_a_loadable_weights_folder(tmp_path) -> None:
    threads = torch.get_num_threads()  # the recipe sets its own; give them back afterwards
    try:
        report = run(Recipe.quick(), tmp_path / "weights", tmp_path / "work", DemoConfig(), torch.device("cpu"))
    finally:
        torch.set_num_threads(threads)
    assert set(report["stages"]) == set(STAGES)
    assert report["stages"]["a2v"]["rollout"]["every"] == 4  # the quick run refreshes rollouts twice in 12 steps
    written = json.loads((tmp_path / "weights" / "training.json").read_text())
    assert written["recipe"]["a2v_steps"] == 12
    family = DemoFamily.load(tmp_path / "weights")
    trained = family.modules["a2v_dit"].network.state_dict()
    untrained = DemoFamily.random(DemoConfig(), seed=0).modules["a2v_dit"].network.state_dict()
    assert any(not torch.equal(trained[k], untrained[k]) for k in trained)
