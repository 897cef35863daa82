"""What the H.264 + AAC encoder produces, checked once before any frame is encoded."""

from __future__ import annotations

from dataclasses import dataclass

# x264's speed presets, fastest first; the real-time ones end at "fast".
X264_PRESETS = (
    "ultrafast",
    "superfast",
    "veryfast",
    "faster",
    "fast",
    "medium",
    "slow",
    "slower",
    "veryslow",
    "placebo",
)

# The sampling frequencies AAC can signal (MPEG-4 audio sampling frequency table).
AAC_RATES = (96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350)


@dataclass(frozen=True)
class EncoderSettings:
    """Output format of one encoded stream.

    Frames are fixed-size RGB; the keyframe interval is fixed (no scene-cut
    keyframes) so that live segmenters (HLS, fMP4) can cut at predictable places.
    """

    width: int
    height: int
    fps: int
    audio_rate: int = 48000
    audio_channels: int = 2
    preset: str = "veryfast"
    crf: int = 23
    keyframe_interval_s: float = 1.0

    def __post_init__(self) -> None:
        for name in ("width", "height"):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0 or value % 2:
                raise ValueError(f"{name} must be a positive even integer (H.264 yuv420p), got {value!r}")
        if not isinstance(self.fps, int) or self.fps <= 0:
            raise ValueError(f"fps must be a positive integer, got {self.fps!r}")
        if self.audio_rate not in AAC_RATES:
            raise ValueError(f"audio_rate {self.audio_rate!r} is not an AAC sample rate; use one of {AAC_RATES}")
        if self.audio_channels not in (1, 2):
            raise ValueError(f"audio_channels must be 1 or 2, got {self.audio_channels!r}")
        if self.preset not in X264_PRESETS:
            raise ValueError(f"preset {self.preset!r} is not an x264 preset; use one of {X264_PRESETS}")
        if not isinstance(self.crf, int) or not 0 <= self.crf <= 51:
            raise ValueError(f"crf must be an integer in 0..51, got {self.crf!r}")
        if not self.keyframe_interval_s > 0 or round(self.fps * self.keyframe_interval_s) < 1:
            raise ValueError(f"keyframe_interval_s must give at least one frame per GOP at {self.fps} fps, got {self.keyframe_interval_s!r}")

    @property
    def gop(self) -> int:
        """Frames from one keyframe to the next."""
        return round(self.fps * self.keyframe_interval_s)

    def x264_options(self) -> dict[str, str]:
        """libx264 options: low latency, fixed GOP, no B-frames (decode order == display order)."""
        return {
            "preset": self.preset,
            "tune": "zerolatency",
            "crf": str(self.crf),
            "x264-params": f"keyint={self.gop}:min-keyint={self.gop}:scenecut=0:bframes=0",
        }
