"""Preconditioned output for I-chunk frames: the residual from their anchors' blend, scaled per noise level.

A plain velocity network must pass the noise of its input through to its
output (v = noise - x0). The demo DiT squeezes 132 input values per token
into 128 channels, so it cannot do that exactly: at t = 1 its prediction
still moved with the input noise by 0.07 (latent mean abs), twice the
frame-to-frame change of the clips. For frames that must meet two anchors
that imprecision is a visible jump at each anchor. Those frames therefore
predict their residual r = x0 - hint from the anchors' blend
(`bridge_hint.py`), with EDM-style scaling (Karras et al. 2022): with
r_t = x_t - (1 - t) hint = (1 - t) r + t noise,
x0 = hint + c_skip(t) r_t + c_out(t) F. At t = 1 the output ignores r_t
(nothing to copy); near t = 0 it mostly keeps r_t. F has unit variance at
every t when sigma is the std of r, and the trainer measures its loss on F
(`loss_scale`).

N-chunk frames keep the plain velocity output: a full run that predicted
them the same way (an absolute x0, sigma 1.0) doubled the change between
their frames and lost lip sync (0.43 against 0.95 on a held-out clip).
"""

from __future__ import annotations

from torch import Tensor

MIN_TIME = 1e-4
"""Velocity divides by t; training may draw t = 0."""


def _scales(t: Tensor, sigma: float) -> tuple[Tensor, Tensor]:
    """c_skip, c_out for r_t = (1 - t) r + t noise with std(r) = sigma."""
    denominator = ((1 - t) * sigma) ** 2 + t**2
    return (1 - t) * sigma**2 / denominator, t * sigma / denominator.sqrt()


def residual_velocity(output: Tensor, x_t: Tensor, hint: Tensor, t: Tensor, sigma: float) -> Tensor:
    """Velocity from the network output F ([B, C, T, h, w], t [B]): x0 = hint + c_skip r_t + c_out F."""
    t5 = t.clamp_min(MIN_TIME)[:, None, None, None, None]
    c_skip, c_out = _scales(t5, sigma)
    x0 = hint + c_skip * (x_t - (1 - t5) * hint) + c_out * output
    return (x_t - x0) / t5


def loss_scale(t: Tensor, sigma: float) -> Tensor:
    """[B] factor that turns a velocity error into the error of F: v_err = x0_err / t and F_err = x0_err / c_out."""
    t = t.clamp_min(MIN_TIME)
    return t / _scales(t, sigma)[1]
