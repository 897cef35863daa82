"""FlashHead's pure pieces against the golden set's tensors: timesteps, window indexing, colour correction and truncation."""

from __future__ import annotations

from pathlib import Path

import torch

from avatarstream.models.flashhead.audio_features import window_indices, windows
from avatarstream.models.flashhead.color import correct_colors, to_uint8
from avatarstream.models.flashhead.sampler import renoise, timesteps
from avatarstream.weights.files import read_safetensors

CASES = Path(__file__).parents[1] / "fixtures" / "flashhead-tiny" / "cases"


def test_the_shifted_four_step_table_is_the_references_exactly() -> None:
    assert torch.equal(timesteps(4, 5.0), read_safetensors(CASES / "stream_pro.safetensors")["timesteps"])
    assert timesteps(7, 5.0).shape == (8,) and timesteps(7, 5.0)[-1] == 0  # other counts: a linspace from 1000 to 1, then 0


def test_each_frame_takes_the_five_rows_around_it_clamped_to_the_buffer() -> None:
    audio = read_safetensors(CASES / "audio.safetensors")
    for c in range(3):
        assert torch.equal(windows(audio[f"c{c}_features"], audio[f"c{c}_audio"].shape[1]), audio[f"c{c}_audio"])
    assert window_indices(3, 4).tolist() == [[0, 0, 1, 2, 3], [0, 1, 2, 3, 3], [1, 2, 3, 3, 3]]


def test_the_last_step_renoises_to_the_clean_latent() -> None:
    t = read_safetensors(CASES / "stream_pro.safetensors")
    schedule = timesteps(4, 5.0)
    x = renoise(t["c1_step3_latent_in"], t["c1_step3_v"], schedule[3:4], schedule[4:5], t["c1_step3_eps"])
    x[:, : t["c1_motion_latents_in"].shape[1]] = t["c1_motion_latents_in"]
    assert torch.equal(x, t["c1_x0"])


def test_colour_correction_and_truncation_give_the_references_first_frames() -> None:
    t = read_safetensors(CASES / "stream_pro.safetensors")
    motion_frames = t["c0_video_float"].shape[1] - t["frames_u8"].shape[0] // 3
    frames = to_uint8(correct_colors(t["c0_video_float"][None], t["cond_image"], 1.0))[motion_frames:]
    golden = t["frames_u8"][: frames.shape[0]]
    assert (frames.int() - golden.int()).abs().max() <= 1 and (frames != golden).float().mean() <= 1e-3
    assert torch.equal(correct_colors(t["c0_video_float"][None], t["cond_image"], 0.0), t["c0_video_float"][None])


def test_sessions_encoding_at_once_with_other_buffer_lengths_get_their_own_features() -> None:
    """The resampling to video-frame rows is per encode: two threads on one wav2vec2, 37 and 50 rows, as alone."""
    import threading

    from transformers import Wav2Vec2Config, Wav2Vec2Model

    from avatarstream.models.flashhead.audio_features import frame_features

    torch.manual_seed(0)
    sizes = {"hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 32, "conv_dim": (16,) * 7,
             "num_conv_pos_embeddings": 16, "num_conv_pos_embedding_groups": 2}  # fmt: skip
    model = Wav2Vec2Model(Wav2Vec2Config(**sizes)).eval()
    values = torch.randn(32000)
    with torch.inference_mode():
        alone = {rows: frame_features(model, values, rows) for rows in (37, 50)}
        together: dict[int, list[torch.Tensor]] = {37: [], 50: []}
        start = threading.Barrier(2)

        def encode(rows: int) -> None:
            start.wait()
            with torch.inference_mode():
                together[rows].extend(frame_features(model, values, rows) for _ in range(4))

        threads = [threading.Thread(target=encode, args=(rows,)) for rows in (37, 50)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    for rows, outs in together.items():
        assert len(outs) == 4 and all(torch.equal(out, alone[rows]) for out in outs) and alone[rows].shape[0] == rows
