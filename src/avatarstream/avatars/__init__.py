"""Procedural talking avatars: identities, speech-driven mouths, motion, and a numpy renderer.

They give the demo family something real to learn from and ground truth to
be measured against (mouth openness per frame, the exact reference image).
"""

from avatarstream.avatars.identity import Identity
from avatarstream.avatars.motion import Motion, motion_track
from avatarstream.avatars.mouth import MouthTrack, mouth_track
from avatarstream.avatars.renderer import FRAME_SIZE, MOUTH_BOX, Pose, reference_image, render_clip, render_frame

__all__ = [
    "FRAME_SIZE",
    "MOUTH_BOX",
    "Identity",
    "Motion",
    "MouthTrack",
    "Pose",
    "motion_track",
    "mouth_track",
    "reference_image",
    "render_clip",
    "render_frame",
]
