"""FlashVSRStream's contract: frames in chunk by chunk, exactly as many out, the same whatever the pieces, bounded memory.

Equality with the reference's 37 frames (tiny and full mode, pushed in pieces of
7, 13, 1 and 19 frames) is the parity test's stream case
(tests/parity/test_flashvsr_parity.py); these tests hold the stream to itself.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from avatarstream.families.flashvsr.layout import resolve
from avatarstream.families.flashvsr.networks import FlashVSRNetworks
from avatarstream.models.flashvsr.stream import FlashVSRStream, output_size

GOLDEN = Path(__file__).parents[1] / "fixtures" / "flashvsr-tiny"
CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def networks() -> FlashVSRNetworks:
    return FlashVSRNetworks.load(resolve(GOLDEN / "weights" / "FlashVSR"))


@pytest.fixture(scope="module")
def frames() -> torch.Tensor:
    """The golden set's 40 low-resolution frames (32x32)."""
    paths = sorted((GOLDEN / "cases" / "lr_frames").glob("frame_*.png"))
    return torch.from_numpy(np.stack([np.asarray(Image.open(p).convert("RGB")) for p in paths]))


def seeded_noise(first: int, count: int) -> torch.Tensor:
    """Noise drawn per latent frame from its index, so any split of the timeline draws the same."""
    return torch.cat([torch.randn(1, 16, 1, 16, 16, generator=torch.Generator().manual_seed(first + i)) for i in range(count)], dim=2)


def stream(networks: FlashVSRNetworks) -> FlashVSRStream:
    return FlashVSRStream(networks, noise=seeded_noise, device=CPU, dtype=torch.float32)


def run(networks: FlashVSRNetworks, frames: torch.Tensor, pieces: list[int]) -> tuple[torch.Tensor, list[int]]:
    session, out = stream(networks), []
    for a, b in itertools.pairwise(itertools.accumulate([0, *pieces])):
        out.append(session.push(frames[a:b]))
    out.append(session.finish())
    return torch.cat(out), [o.shape[0] for o in out]


def test_the_same_input_in_any_pieces_gives_the_same_frames(networks: FlashVSRNetworks, frames: torch.Tensor) -> None:
    whole, _ = run(networks, frames, [40])
    uneven, counts = run(networks, frames, [7, 13, 1, 19])
    singles, _ = run(networks, frames, [1] * 40)
    assert whole.shape == (40, 128, 128, 3) and whole.dtype == torch.uint8
    assert torch.equal(whole, uneven) and torch.equal(whole, singles)
    assert counts == [0, 0, 0, 29, 11]  # calls 0 and 1 (21 + 8 frames) once 33 frames are in; finish gives the rest


def test_the_first_frames_come_after_25_then_8_per_8(networks: FlashVSRNetworks, frames: torch.Tensor) -> None:
    session = stream(networks)
    assert session.push(frames[:24]).shape[0] == 0
    assert session.push(frames[24:25]).shape[0] == 21
    assert session.push(frames[25:32]).shape[0] == 0
    assert session.push(frames[32:40]).shape[0] == 8
    assert session.finish().shape[0] == 11


@pytest.mark.parametrize("count", [1, 10, 23])
def test_fewer_frames_than_one_call_still_come_out(networks: FlashVSRNetworks, frames: torch.Tensor, count: int) -> None:
    session = stream(networks)
    assert session.push(frames[:count]).shape[0] == 0
    out = session.finish()
    assert out.shape == (count, 128, 128, 3)
    padded = torch.cat([frames[:count], frames[count - 1 : count].expand(40 - count, -1, -1, -1)])
    assert torch.equal(out, run(networks, padded, [40])[0][:count])  # the last frame repeated: padding further changes nothing


def test_a_long_input_holds_constant_memory(networks: FlashVSRNetworks, frames: torch.Tensor) -> None:
    session = stream(networks)
    assert session.push(frames[:25]).shape[0] == 21
    held = session.nbytes()
    rng = np.random.default_rng(0)
    for _ in range(25):  # 200 frames more, time positions up to latent frame 56
        piece = torch.from_numpy(rng.integers(0, 256, (8, 32, 32, 3), dtype=np.uint8))
        assert session.push(piece).shape[0] == 8
        assert session.nbytes() == held
    assert session.finish().shape[0] == 4


def test_the_stream_refuses_what_it_cannot_take(networks: FlashVSRNetworks, frames: torch.Tensor) -> None:
    session = stream(networks)
    with pytest.raises(ValueError, match="uint8 frames"):
        session.push(frames.float())
    with pytest.raises(ValueError, match="too small"):
        session.push(frames[:1, :16, :16])
    session.push(frames[:2])
    with pytest.raises(ValueError, match="32x32"):
        session.push(torch.zeros(1, 48, 48, 3, dtype=torch.uint8))
    assert session.finish().shape[0] == 2
    with pytest.raises(RuntimeError, match="finished"):
        session.push(frames[:1])


def test_output_size_is_the_x4_size_cropped_to_multiples_of_128() -> None:
    assert output_size(32, 32) == (128, 128)
    assert output_size(480, 270) == (1920, 1024)
    assert output_size(20, 40) == (0, 128)
