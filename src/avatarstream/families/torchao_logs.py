"""Keep torchao's import quiet: diffusers imports it whenever it is installed, and three of its messages are noise here.

diffusers imports torchao with its models (to register torchao's tensor types
for unpickling), so every run of a Wan-based family imports it, quantized or
not, and would print, before anything of ours:

- torchao's "Failed to load .../_C_*.so": optional kernels built for another
  Python or for CUDA (the CPU build cannot load them; nothing here uses them);
- torch's "<enum ...> is an Enum subclass and is now natively supported by
  torch.compile": torchao 0.18 registers its enums the older way;
- diffusers' "Unable to import `torchao` Tensor objects": diffusers 0.42 looks
  for classes torchao 0.18 moved; it only concerns checkpoints saved by
  torchao, which no family here reads.

Each is dropped by a filter that matches that message alone, so every other
warning of these libraries still shows, and a command's error stays one line.
"""

from __future__ import annotations

import logging

#: logger -> the start (or a part) of the one message dropped from it.
NOISE = {
    "torchao": "Failed to load ",
    "torch.utils._pytree": "is an Enum subclass and is now natively supported by torch.compile",
    "diffusers.quantizers.torchao.torchao_quantizer": "Unable to import `torchao` Tensor objects",
}


class _Drop(logging.Filter):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def filter(self, record: logging.LogRecord) -> bool:
        return self.text not in record.getMessage()


def quiet() -> None:
    """Install the filters (once; safe to call again)."""
    for name, text in NOISE.items():
        logger = logging.getLogger(name)
        if not any(isinstance(f, _Drop) for f in logger.filters):
            logger.addFilter(_Drop(text))
