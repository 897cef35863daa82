"""The InfiniteTalk sampler's parts against the rules the reference follows (golden.json describes them)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from avatarstream.models.infinitetalk.sampler import Guidance, euler_step, fix_motion, sample, timesteps


def test_schedule_matches_the_reference(golden_dir: Path) -> None:
    reference = load_file(str(golden_dir / "cases" / "sampler.safetensors"))["timesteps"]
    torch.testing.assert_close(timesteps(4, 7.0), reference, rtol=0, atol=1e-3)
    schedule = timesteps(40, 7.0)
    assert schedule[0] == 1000 and schedule[-1] == 0 and bool((schedule[1:] < schedule[:-1]).all())


def test_bad_schedule_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="steps"):
        timesteps(0, 7.0)
    with pytest.raises(ValueError, match="shift"):
        timesteps(4, 0.0)


def test_guidance_picks_the_calls_the_reference_makes() -> None:
    assert Guidance(5.0, 4.0).predictions == ((True, True), (False, True), (False, False))
    assert Guidance(1.0, 4.0).predictions == ((True, True), (True, False))
    assert Guidance(1.0, 1.0).predictions == ((True, True),)


def test_guidance_combinations() -> None:
    cond, drop, uncond = torch.tensor(3.0), torch.tensor(2.0), torch.tensor(0.5)
    assert Guidance(5.0, 4.0).combine([cond, drop, uncond]) == 0.5 + 5 * (3 - 2) + 4 * (2 - 0.5)
    assert Guidance(1.0, 4.0).combine([cond, drop]) == 2 + 4 * (3 - 2)
    assert Guidance(1.0, 1.0).combine([cond]) == cond


def test_euler_step_runs_from_noise_to_data() -> None:
    noise, data = torch.randn(8), torch.randn(8)
    velocity = noise - data  # flow matching: x_t = t*noise + (1-t)*data
    x = euler_step(noise, velocity, torch.tensor(1000.0), torch.tensor(0.0))
    torch.testing.assert_close(x, data)


def test_motion_frames_stay_clean_through_sampling() -> None:
    motion = torch.full((1, 2, 2, 1, 1), 7.0)
    seen: list[torch.Tensor] = []

    def predict(latent: torch.Tensor, t: torch.Tensor, conditions) -> list[torch.Tensor]:
        seen.append(latent.clone())
        return [torch.ones_like(latent) for _ in conditions]

    out = sample(predict, torch.zeros(1, 2, 5, 1, 1), motion, timesteps(3, 5.0), Guidance(5.0, 4.0))
    assert len(seen) == 3 and all(bool((s[:, :, :2] == 7).all()) for s in seen)
    assert bool((out[:, :, :2] == 7).all()) and bool((out[:, :, 2:] == -1).all())  # ones integrated from 1000 to 0
    assert torch.equal(fix_motion(out, motion[:, :, :1])[:, :, 1:], out[:, :, 1:])


def test_guidance_predictions_fall_back_to_one_at_a_time_when_memory_runs_out(golden_dir: Path) -> None:
    """The stacked forward and the one-condition forwards give the same velocities; after one OOM the predictor stays sequential."""
    from avatarstream.families.infinitetalk.layout import resolve
    from avatarstream.families.infinitetalk.networks import InfiniteTalkNetworks
    from avatarstream.models.infinitetalk.predict import ChunkConditions, DiTPredictor

    dit = InfiniteTalkNetworks.load(resolve(golden_dir / "weights"), encoders=False).dit
    t = load_file(str(golden_dir / "cases" / "sampler.safetensors"))
    cond = ChunkConditions(t["c0_y"][None], t["clip_fea"], t["context"][None], t["context_null"][None], t["c0_audio"])
    latent, step, conditions = t["c0_step1_latent_in"][None], timesteps(4, 7.0)[1:2], Guidance(5.0, 4.0).predictions
    with torch.inference_mode():
        stacked = DiTPredictor(dit, cond)(latent, step, conditions)
        batches: list[int] = []
        real_forward = dit.forward

        def short_of_memory(x: torch.Tensor, *args: torch.Tensor) -> torch.Tensor:
            batches.append(x.shape[0])
            if x.shape[0] > 1:
                raise torch.OutOfMemoryError("out of memory (simulated)")
            return real_forward(x, *args)

        dit.forward = short_of_memory  # type: ignore[method-assign]
        predictor = DiTPredictor(dit, cond)
        first = predictor(latent, step, conditions)
        second = predictor(latent, step, conditions)
    assert batches == [3, 1, 1, 1, 1, 1, 1]  # one stacked try, then one condition at a time for good
    for a, b in zip(stacked, first, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-5)
    for v, name in zip(first, ("v_cond", "v_drop_text", "v_uncond"), strict=True):
        torch.testing.assert_close(v[0], t[f"c0_step1_{name}"], rtol=0, atol=3e-4)  # the reference's velocities
    assert all(torch.equal(a, b) for a, b in zip(first, second, strict=True))
