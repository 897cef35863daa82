import torch

from avatarstream.models.demo import DemoConfig, TextEncoder

CFG = DemoConfig.tiny()


def test_tokenize_bytes_truncation_and_empty() -> None:
    enc = TextEncoder(CFG)
    assert enc.tokenize("hi").tolist() == [[104, 105]]
    assert enc.tokenize("é").tolist() == [[0xC3, 0xA9]]
    assert enc.tokenize("").tolist() == [[256]]
    assert enc.tokenize("x" * 1000).shape == (1, CFG.text.max_length)


def test_forward_shape_and_content_dependence() -> None:
    torch.manual_seed(0)
    enc = TextEncoder(CFG).eval()
    with torch.inference_mode():
        a = enc(enc.tokenize("smile"))
        b = enc(enc.tokenize("frown"))
    assert a.shape == (1, 5, CFG.text.dim)
    assert torch.isfinite(a).all() and (a - b).abs().max() > 1e-3
