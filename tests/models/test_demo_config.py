import dataclasses
import json

import pytest

from avatarstream.models.demo import AudioEncoderConfig, DemoConfig, DiTConfig, SRConfig


@pytest.mark.parametrize("cfg", [DemoConfig(), DemoConfig.tiny()], ids=["default", "tiny"])
def test_round_trip_through_json(cfg: DemoConfig) -> None:
    restored = DemoConfig.from_dict(json.loads(json.dumps(cfg.to_dict())))
    assert restored == cfg
    assert isinstance(restored.dit, DiTConfig)


def test_from_dict_fills_defaults_and_rejects_unknown_keys() -> None:
    assert DemoConfig.from_dict({"dit": {"layers": 3}}) == DemoConfig(dit=DiTConfig(layers=3))
    with pytest.raises(ValueError, match="unknown config keys"):
        DemoConfig.from_dict({"fsp": 25})
    with pytest.raises(ValueError, match="unknown config keys"):
        DemoConfig.from_dict({"dit": {"depth": 3}})


def test_derived_sizes() -> None:
    cfg = DemoConfig()
    assert cfg.samples_per_frame == 640
    assert (cfg.base_latent_size, cfg.latent_size) == (16, 32)
    assert (DemoConfig.tiny().base_latent_size, DemoConfig.tiny().latent_size) == (4, 8)


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"sample_rate": 16000, "fps": 24}, "multiple of fps"),
        ({"image_size": 256, "base_size": 96}, "exactly 2 x base_size"),
        ({"image_size": 200, "base_size": 100}, "divisible"),
        ({"dit": DiTConfig(dim=130, heads=4)}, "multiple of heads"),
        ({"dit": DiTConfig(dim=12, heads=4)}, "RoPE"),
        ({"sr": SRConfig(t_start=1.0)}, "t_start"),
        ({"audio": AudioEncoderConfig(mel_per_frame=3)}, "mel_per_frame"),
        ({"audio": AudioEncoderConfig(win_length=1024)}, "win_length"),
    ],
)
def test_invalid_configs_raise(changes: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        DemoConfig(**changes)


def test_configs_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        DemoConfig().fps = 30  # type: ignore[misc]
