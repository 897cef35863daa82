import pytest
import torch

from avatarstream.models.demo import FlowMatchEuler


@pytest.mark.parametrize("shift", [1.0, 3.0, 0.5])
def test_timesteps_monotone_from_one_to_zero(shift: float) -> None:
    ts = FlowMatchEuler(6, shift).timesteps()
    assert ts.shape == (7,)
    assert ts[0] == 1.0 and ts[-1] == 0.0
    assert (ts[1:] < ts[:-1]).all()


def test_shift_behaviour() -> None:
    plain = FlowMatchEuler(4, 1.0).timesteps()
    torch.testing.assert_close(plain, torch.linspace(1, 0, 5))
    high = FlowMatchEuler(4, 3.0).timesteps()
    assert (high[1:-1] > plain[1:-1]).all()  # shift > 1 stays longer at high noise
    torch.testing.assert_close(high[2], torch.tensor(0.75))  # 3 * 0.5 / (1 + 2 * 0.5)


@pytest.mark.parametrize("steps, shift", [(1, 1.0), (4, 3.0), (7, 0.7)])
def test_straight_path_recovers_x0(steps: int, shift: float) -> None:
    x0 = torch.randn(2, 3, 4)
    noise = torch.randn(2, 3, 4)
    seen: list[torch.Tensor] = []

    def velocity(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        seen.append(t)
        torch.testing.assert_close(x, (1 - t[:, None, None]) * x0 + t[:, None, None] * noise)
        return noise - x0

    out = FlowMatchEuler(steps, shift).sample(velocity, noise)
    torch.testing.assert_close(out, x0, atol=1e-5, rtol=0)
    assert len(seen) == steps and seen[0].shape == (2,)


@pytest.mark.parametrize("steps, shift", [(0, 1.0), (2, 0.0), (2, -1.0)])
def test_invalid_arguments_raise(steps: int, shift: float) -> None:
    with pytest.raises(ValueError, match="num_steps|shift"):
        FlowMatchEuler(steps, shift)
