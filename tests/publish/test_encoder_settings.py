"""EncoderSettings: defaults, derived x264 options, and clear rejections."""

from __future__ import annotations

import pytest

from avatarstream.publish import EncoderSettings


def test_defaults_and_x264_options() -> None:
    settings = EncoderSettings(width=1280, height=720, fps=25)
    assert (settings.audio_rate, settings.audio_channels) == (48000, 2)
    assert (settings.preset, settings.crf, settings.keyframe_interval_s) == ("veryfast", 23, 1.0)
    assert settings.gop == 25
    options = settings.x264_options()
    assert options["tune"] == "zerolatency"
    assert options["preset"] == "veryfast"
    assert options["crf"] == "23"
    assert "keyint=25:min-keyint=25:scenecut=0:bframes=0" in options["x264-params"]


def test_gop_follows_keyframe_interval() -> None:
    assert EncoderSettings(width=64, height=64, fps=30, keyframe_interval_s=2.0).gop == 60


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"width": 63}, "width must be a positive even integer"),
        ({"height": 0}, "height must be a positive even integer"),
        ({"fps": 0}, "fps must be a positive integer"),
        ({"fps": 24.5}, "fps must be a positive integer"),
        ({"audio_rate": 12345}, "audio_rate 12345 is not an AAC sample rate"),
        ({"audio_channels": 6}, "audio_channels must be 1 or 2"),
        ({"preset": "turbo"}, "preset 'turbo' is not an x264 preset"),
        ({"crf": 52}, "crf must be an integer in 0..51"),
        ({"keyframe_interval_s": 0.0}, "keyframe_interval_s must give at least one frame per GOP"),
        ({"keyframe_interval_s": 0.01}, "keyframe_interval_s must give at least one frame per GOP"),
    ],
)
def test_rejects_bad_values(changes: dict[str, object], message: str) -> None:
    values: dict[str, object] = {"width": 64, "height": 48, "fps": 25, **changes}
    with pytest.raises(ValueError, match=message):
        EncoderSettings(**values)  # type: ignore[arg-type]


def test_is_frozen() -> None:
    settings = EncoderSettings(width=64, height=48, fps=25)
    with pytest.raises(AttributeError):
        settings.fps = 30  # type: ignore[misc]
