"""How the A2V DiT gives I-chunk frames their anchors' blend as a hint and turns its output into velocity."""

from __future__ import annotations

import torch

from avatarstream.models.demo import A2VDiT, DemoConfig, ReferenceEncoder
from avatarstream.models.demo.bridge_hint import bridge_hint, bridged_frames
from avatarstream.models.demo.preconditioning import loss_scale, residual_velocity

CFG = DemoConfig.tiny()


def frames_of(values: list[float]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float32).view(1, 1, -1, 1, 1).expand(1, 2, -1, 3, 3).clone()


def test_frames_between_anchors_get_their_distance_weighted_blend() -> None:
    mask = torch.tensor([[1.0, 0, 0, 0, 1]])
    assert bridge_hint(frames_of([1, 0, 0, 0, 5]), mask)[0, 0, :, 1, 1].tolist() == [1, 2, 3, 4, 5]
    assert bridged_frames(mask).tolist() == [[False, True, True, True, False]]


def test_frames_after_motion_frames_get_no_hint() -> None:
    """Holding the last motion frame as a hint made long sessions drift; an N-chunk's frames stay zero."""
    mask = torch.tensor([[1.0, 1, 0, 0, 0]])
    assert bridge_hint(frames_of([2, 3, 9, 9, 9]), mask)[0, 1, :, 0, 2].tolist() == [2, 3, 0, 0, 0]
    assert not bridged_frames(mask).any()


def test_each_batch_item_follows_its_own_mask() -> None:
    cond = torch.cat([frames_of([1, 0, 3]), frames_of([0, 6, 0])])
    mask = torch.tensor([[1.0, 0, 1], [0, 1, 0]])
    assert bridge_hint(cond, mask)[:, 0, :, 0, 0].tolist() == [[1, 2, 3], [0, 6, 0]]
    assert bridged_frames(mask).tolist() == [[False, True, False], [False, False, False]]


def test_at_pure_noise_the_prediction_ignores_the_noise() -> None:
    """x0 = x_t - t v: at t = 1 it is hint + sigma F whatever the input noise (the point of the scaling)."""
    torch.manual_seed(0)
    output, hint = torch.randn(2, 4, 3, 2, 2), torch.randn(2, 4, 3, 2, 2)
    t = torch.ones(2)
    for _ in range(3):
        x_t = torch.randn(2, 4, 3, 2, 2)
        x0 = x_t - residual_velocity(output, x_t, hint, t, 0.1)
        assert torch.allclose(x0, hint + 0.1 * output, atol=1e-5)


def test_near_data_the_prediction_keeps_the_input() -> None:
    torch.manual_seed(1)
    x_t, hint = torch.randn(1, 4, 3, 2, 2), torch.randn(1, 4, 3, 2, 2)
    t = torch.full((1,), 1e-3)
    x0 = x_t - t * residual_velocity(torch.randn_like(x_t), x_t, hint, t, 0.1)
    assert (x0 - x_t).abs().max() < 0.05


def test_loss_scale_turns_velocity_error_into_output_error() -> None:
    torch.manual_seed(2)
    x_t, hint = torch.randn(3, 4, 3, 2, 2), torch.randn(3, 4, 3, 2, 2)
    t = torch.tensor([0.05, 0.5, 1.0])
    a, b = torch.randn_like(x_t), torch.randn_like(x_t)
    velocity_gap = residual_velocity(a, x_t, hint, t, 0.1) - residual_velocity(b, x_t, hint, t, 0.1)
    assert torch.allclose(velocity_gap * loss_scale(t, 0.1)[:, None, None, None, None], b - a, atol=1e-4)  # v = (x_t - x0) / t


def test_the_dit_preconditions_only_the_frames_between_anchors() -> None:
    """With a silent head (output F = 0) at t = 1, a bridged frame's velocity is x_t - hint, so it moves with
    its anchors; an N-chunk frame's velocity is the raw output, zero whatever its motion frames are."""
    torch.manual_seed(3)
    dit = A2VDiT(CFG).eval()
    torch.nn.init.zeros_(dit.head.proj.weight)
    torch.nn.init.zeros_(dit.head.proj.bias)
    c, size, frames = CFG.vae.latent_channels, CFG.base_latent_size, 5
    x = torch.randn(1, c, frames, size, size)
    t = torch.ones(1)
    audio = torch.randn(1, frames, CFG.audio.tokens_per_frame, CFG.audio.dim)
    text = torch.randn(1, 2, CFG.text.dim)
    reference = ReferenceEncoder(CFG).eval()(torch.randn(1, c, size, size))
    with torch.no_grad():
        for given in ([0, 4], [0, 1]):
            mask = torch.zeros(1, frames)
            mask[:, given] = 1.0
            cond = torch.randn(1, c, frames, size, size) * mask[:, None, :, None, None]
            v = dit(x, cond, mask, t, audio, text, reference)
            if given == [0, 4]:
                assert torch.allclose(v[:, :, 1:4], x[:, :, 1:4] - bridge_hint(cond, mask)[:, :, 1:4], atol=1e-5)
            else:
                assert v[:, :, 2:].abs().max() == 0
