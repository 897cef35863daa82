"""Numpy renderer of the procedural avatar: 256x256 RGB, anti-aliased.

Every shape is a signed distance field in pixels; its coverage of a pixel is
``clip(0.5 - d, 0, 1)``, which gives one-pixel anti-aliased edges without
supersampling. Head shapes are evaluated in head-local coordinates (the pixel
grid moved and rotated by the pose), so motion is smooth at sub-pixel level.
The mouth interior has one fixed near-black colour for every identity: it is
what the lip reader in `avatarstream.evaluation` measures.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from avatarstream.avatars.identity import Colour, Identity
from avatarstream.avatars.motion import Motion, motion_track
from avatarstream.avatars.mouth import MouthTrack

FRAME_SIZE = 256
HEAD_CENTRE = (128.0, 112.0)
MOUTH_Y = 38.0
"""Mouth centre below the head centre, the same for every identity."""
MOUTH_INTERIOR: Colour = (25.0, 8.0, 12.0)
MOUTH_BOX = (126, 180, 90, 166)
"""(top, bottom, left, right) in frame pixels: holds the mouth in every pose the motion produces."""

_YS, _XS = np.mgrid[0:FRAME_SIZE, 0:FRAME_SIZE].astype(np.float32) + 0.5


@dataclass(frozen=True)
class Pose:
    """Everything that changes from frame to frame."""

    dx: float = 0.0
    dy: float = 0.0
    angle: float = 0.0
    openness: float = 0.0
    width: float = 0.0
    blink: float = 0.0


def _ellipse(u: np.ndarray, v: np.ndarray, cu: float, cv: float, ru: float, rv: float) -> np.ndarray:
    """Approximate signed distance (pixels) to an axis-aligned ellipse: first-order, exact on the axes."""
    pu, pv = (u - cu) / ru, (v - cv) / rv
    r = np.sqrt(pu * pu + pv * pv) + 1e-6
    grad = np.sqrt((pu / ru) ** 2 + (pv / rv) ** 2) / r + 1e-6
    return (r - 1.0) / grad


def _rotated(u: np.ndarray, v: np.ndarray, cu: float, cv: float, angle: float) -> tuple[np.ndarray, np.ndarray]:
    c, s = np.cos(angle), np.sin(angle)
    du, dv = u - cu, v - cv
    return cu + c * du + s * dv, cv - s * du + c * dv


class _Canvas:
    """The frame being painted plus head-local coordinates.

    `paint` takes a distance function of (u, v) and the shape's bounding circle
    in head coordinates, and evaluates it only inside that circle's box: most
    shapes are small, so this keeps a frame at a few milliseconds."""

    def __init__(self, background: np.ndarray, pose: Pose) -> None:
        self.rgb = background
        self.hx, self.hy = HEAD_CENTRE[0] + pose.dx, HEAD_CENTRE[1] + pose.dy
        self.cos, self.sin = float(np.cos(pose.angle)), float(np.sin(pose.angle))
        self.u = self.cos * (_XS - self.hx) + self.sin * (_YS - self.hy)
        self.v = -self.sin * (_XS - self.hx) + self.cos * (_YS - self.hy)

    def paint(
        self,
        distance: Callable[[np.ndarray, np.ndarray], np.ndarray],
        colour: Colour,
        bound: tuple[float, float, float],
        alpha: float = 1.0,
        softness: float = 1.0,
    ) -> None:
        cu, cv, radius = bound
        x = self.hx + self.cos * cu - self.sin * cv
        y = self.hy + self.sin * cu + self.cos * cv
        reach = radius + 2.0 * softness + 2.0
        y0, y1 = max(int(y - reach), 0), min(int(y + reach) + 1, FRAME_SIZE)
        x0, x1 = max(int(x - reach), 0), min(int(x + reach) + 1, FRAME_SIZE)
        if y0 >= y1 or x0 >= x1:
            return
        d = distance(self.u[y0:y1, x0:x1], self.v[y0:y1, x0:x1])
        cover = np.clip(0.5 - d / softness, 0.0, 1.0)[..., None] * alpha
        region = self.rgb[y0:y1, x0:x1]
        region += cover * (np.asarray(colour, dtype=np.float32) - region)


def _background(identity: Identity) -> np.ndarray:
    mix = (_YS / FRAME_SIZE)[..., None]
    top = np.asarray(identity.background_top, dtype=np.float32)
    bottom = np.asarray(identity.background_bottom, dtype=np.float32)
    vignette = 1.0 - 0.18 * (((_XS - 128) ** 2 + (_YS - 110) ** 2) / 128**2)[..., None]
    return ((1 - mix) * top + mix * bottom) * vignette


def _shade(colour: Colour, factor: float | tuple[float, float, float]) -> Colour:
    factors = factor if isinstance(factor, tuple) else (factor,) * 3
    r, g, b = (float(np.clip(c * f, 0, 255)) for c, f in zip(colour, factors))
    return r, g, b


def render_frame(identity: Identity, pose: Pose) -> np.ndarray:
    """One uint8 RGB frame [256, 256, 3] of `identity` in `pose`."""
    idn = identity
    fw, fh = idn.face_width, idn.face_height
    canvas = _Canvas(_background(idn), pose)
    body = _ellipse(_XS, _YS, 128 + 0.4 * pose.dx, 112 + fh + 98 + 0.4 * pose.dy, 118, 72)
    canvas.rgb += np.clip(0.5 - body, 0.0, 1.0)[..., None] * (np.asarray(idn.shirt, dtype=np.float32) - canvas.rgb)
    neck_v = fh * 0.8 + 18
    canvas.paint(lambda u, v: _ellipse(u, v, 0, neck_v, fw * 0.42, 40), _shade(idn.skin, 0.85), (0, neck_v, 40))
    _hair_back(canvas, idn)
    for side in (-1, 1):
        ear_u = side * fw * 0.97
        canvas.paint(partial(_ellipse, cu=ear_u, cv=-0.05 * fh, ru=8.5, rv=13), _shade(idn.skin, 0.92), (ear_u, -0.05 * fh, 13))
    jaw_w, jaw_h = fw * (0.95 - 0.2 * idn.chin), 0.72 * fh + 6 * idn.chin
    canvas.paint(lambda u, v: np.minimum(_ellipse(u, v, 0, 0, fw, fh), _ellipse(u, v, 0, 0.3 * fh, jaw_w, jaw_h)), idn.skin, (0, 0.1 * fh, max(fw, fh) * 1.05))
    for side in (-1, 1):
        cheek_u = side * (idn.eye_spacing + 9)
        canvas.paint(
            partial(_ellipse, cu=cheek_u, cv=0.22 * fh, ru=11, rv=7),
            _shade(idn.skin, (1.02, 0.85, 0.85)),
            (cheek_u, 0.22 * fh, 11),
            alpha=0.35,
            softness=6.0,
        )
        if idn.earrings:
            ring_u = side * fw * 0.99
            canvas.paint(partial(_ellipse, cu=ring_u, cv=0.1 * fh + 7, ru=3.2, rv=3.2), (225, 185, 60), (ring_u, 0.1 * fh + 7, 3.2))
    _hair_front(canvas, idn)
    _eyes(canvas, idn, pose.blink)
    nose_v, nose_l, nose_w = -0.12 * fh + 0.75 * idn.nose_length, idn.nose_length, idn.nose_width
    canvas.paint(lambda u, v: _ellipse(u, v, 1.5, nose_v, nose_w * 0.6, nose_l * 0.55), _shade(idn.skin, 0.86), (1.5, nose_v, nose_l * 0.55), softness=2.5)
    canvas.paint(lambda u, v: _ellipse(u, v, 0, nose_v + nose_l * 0.4, nose_w, 4.0), _shade(idn.skin, 0.8), (0, nose_v + nose_l * 0.4, nose_w), softness=2.0)
    _mouth(canvas, idn, pose)
    return np.clip(canvas.rgb + 0.5, 0, 255).astype(np.uint8)


def _hair_back(canvas: _Canvas, idn: Identity) -> None:
    fw, fh = idn.face_width, idn.face_height
    if idn.hair_style == "long":
        canvas.paint(lambda u, v: np.maximum(_ellipse(u, v, 0, -0.1 * fh, fw + 16, fh + 12), v - fh * 0.95), idn.hair, (0, -0.1 * fh, fh + 16))
    elif idn.hair_style == "bun":
        canvas.paint(lambda u, v: _ellipse(u, v, 0, -fh - 10, 19, 17), idn.hair, (0, -fh - 10, 19))
    elif idn.hair_style == "curly":

        def curls(u: np.ndarray, v: np.ndarray) -> np.ndarray:
            bumps = 4.0 * np.sin(9 * np.arctan2(v + 0.2 * fh, u))
            return np.maximum(_ellipse(u, v, 0, -0.2 * fh, fw + 12, fh * 0.95) - bumps, v - 0.25 * fh)

        canvas.paint(curls, idn.hair, (0, -0.2 * fh, max(fw + 16, fh)))


def _hair_front(canvas: _Canvas, idn: Identity) -> None:
    fw, fh = idn.face_width, idn.face_height
    if idn.hair_style == "bald":
        return
    fringe = idn.hair_style == "fringe"  # a side-swept fringe: the hairline slopes

    def cap(u: np.ndarray, v: np.ndarray) -> np.ndarray:
        hairline = -0.3 * fh - 0.12 * u if fringe else -0.42 * fh
        return np.maximum(_ellipse(u, v, 0, -0.12 * fh, fw + 4, fh * 0.95), v - hairline)

    bound = (0, -0.12 * fh, max(fw + 4, fh * 0.95))
    canvas.paint(cap, idn.hair, bound)
    canvas.paint(
        lambda u, v: np.maximum(_ellipse(u, v, -0.3 * fw, -0.8 * fh, 0.35 * fw, 0.1 * fh), -cap(u, v)),
        _shade(idn.hair, 1.35),
        (-0.3 * fw, -0.8 * fh, 0.35 * fw),
        alpha=0.35,
        softness=4.0,
    )


def _eyes(canvas: _Canvas, idn: Identity, blink: float) -> None:
    eye_v, size = -0.12 * idn.face_height, idn.eye_size
    lid = max(size * 0.8 * (1.0 - blink), 0.4)
    for side in (-1, 1):
        cu = side * idn.eye_spacing

        def white(u: np.ndarray, v: np.ndarray, cu: float = cu) -> np.ndarray:
            return _ellipse(u, v, cu, eye_v, size * 1.25, lid)

        def inside(radius: float, du: float = 0.0, dv: float = 0.0, cu: float = cu):
            return lambda u, v: np.maximum(_ellipse(u, v, cu + du, eye_v + dv, radius, radius), white(u, v))

        bound = (cu, eye_v, size * 1.3)
        canvas.paint(white, (245, 245, 240), bound)
        canvas.paint(inside(size * 0.55), idn.eye_colour, bound)
        canvas.paint(inside(size * 0.25), (15, 15, 20), bound)
        canvas.paint(inside(1.6, size * 0.2, -size * 0.2), (255, 255, 255), bound)

        def outline(u: np.ndarray, v: np.ndarray, white: Callable[[np.ndarray, np.ndarray], np.ndarray] = white) -> np.ndarray:
            return np.abs(white(u, v)) - 0.7

        canvas.paint(outline, (40, 30, 30), bound, alpha=0.9)
        brow_v, tilt = eye_v - size - 7, side * idn.brow_tilt

        def brow(u: np.ndarray, v: np.ndarray, cu: float = cu, tilt: float = tilt, brow_v: float = brow_v) -> np.ndarray:
            return _ellipse(*_rotated(u, v, cu, brow_v, tilt), cu, brow_v, size * 1.4, idn.brow_thickness)

        canvas.paint(brow, _shade(idn.hair, 0.9), (cu, brow_v, size * 1.5))
        if idn.glasses:

            def rim(u: np.ndarray, v: np.ndarray, cu: float = cu) -> np.ndarray:
                return np.abs(_ellipse(u, v, cu, eye_v, size * 1.9, size * 1.6)) - 1.3

            canvas.paint(rim, (45, 45, 50), (cu, eye_v, size * 2.0))
    if idn.glasses:
        half = idn.eye_spacing - size * 1.9 + 1
        canvas.paint(lambda u, v: _ellipse(u, v, 0, eye_v - 2, half, 1.3), (45, 45, 50), (0, eye_v - 2, half))


def _mouth(canvas: _Canvas, idn: Identity, pose: Pose) -> None:
    half_width = idn.mouth_width * (1.0 + 0.22 * pose.width)
    opening = 11.0 * pose.openness
    bound = (0, MOUTH_Y, half_width + 3)
    canvas.paint(lambda u, v: _ellipse(u, v, 0, MOUTH_Y, half_width + 2, 3.2 + opening * 0.6), idn.lip, bound)
    canvas.paint(lambda u, v: _ellipse(u, v, 0, MOUTH_Y, half_width * 0.9, 0.9), _shade(idn.lip, 0.8), bound)
    if opening > 0.05:
        canvas.paint(lambda u, v: _ellipse(u, v, 0, MOUTH_Y + 0.5, half_width * 0.82, opening * 0.5), MOUTH_INTERIOR, bound)


def reference_image(identity: Identity) -> np.ndarray:
    """The identity in the neutral pose with its mouth closed: the reference for rendering."""
    return render_frame(identity, Pose())


def render_clip(identity: Identity, mouth: MouthTrack, motion_seed: int, *, fps: int = 25) -> np.ndarray:
    """uint8 [T, 256, 256, 3] driven by `mouth`; deterministic given identity, mouth and motion seed."""
    motion = motion_track(len(mouth), motion_seed, fps)
    return np.stack([render_frame(identity, pose_at(mouth, motion, i)) for i in range(len(mouth))])


def pose_at(mouth: MouthTrack, motion: Motion, frame: int) -> Pose:
    return Pose(
        float(motion.dx[frame]),
        float(motion.dy[frame]),
        float(motion.angle[frame]),
        float(mouth.openness[frame]),
        float(mouth.width[frame]),
        float(motion.blink[frame]),
    )
