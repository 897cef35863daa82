"""Regional compilation (``--compile``): the transformer blocks of every module that has them, compiled once per shape.

Only the blocks are compiled (``network.blocks``, the convention the streamed
and sharded policies work per), so any family whose DiT keeps its blocks there
gets it with no code of its own. Every block of a DiT runs the same code, and
dynamo treats a block's parameters as inputs, so one graph per input shape
serves all of them and compile time is that of one block. A family's shapes
are fixed by its preset and size: the loop compiles during its first chunks
(one graph per kind of chunk) and never after. ``dynamic=False`` keeps dynamo
from trading those fixed-shape kernels for symbolic ones on the second shape.

The block's ``forward`` is compiled, not its ``__call__``: the hooks a policy
puts on a block (streamed: wait for the slot, queue the next block's copy)
stay eager Python, and repointed parameters are just new inputs of the same
shape. Where that does not hold the runtime refuses with one clear error.
"""

from __future__ import annotations

import weakref

import torch
from torch import nn

from avatarstream.runtime.streamed import blocks_of

DEFAULT_BACKEND = "inductor"
#: Graphs kept per block's code: a DiT sees a few shapes (first chunk, steady N-chunks, I-chunks); dynamo's own limit is 8.
RECOMPILE_LIMIT = 32

_compiled: weakref.WeakSet[nn.Module] = weakref.WeakSet()  # blocks whose forward is compiled (a family reused across pipelines)


def compile_blocks(network: nn.Module, backend: str = DEFAULT_BACKEND) -> int:
    """Compile each block of ``network.blocks`` (once per block for the life of the network); returns how many blocks are compiled."""
    blocks = blocks_of(network)
    if blocks is None:
        return 0
    torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, RECOMPILE_LIMIT)
    for block in blocks:
        if block not in _compiled:
            block.forward = torch.compile(block.forward, backend=backend, dynamic=False)
            _compiled.add(block)
    return len(blocks)


def compile_seconds() -> float:
    """Seconds this process has spent compiling graphs so far (dynamo's own record)."""
    metrics = getattr(torch._dynamo.utils, "compilation_time_metrics", {})
    return float(sum(metrics.get("_compile.compile_inner", ())))


def graphs_compiled() -> int:
    """Graphs dynamo has compiled in this process so far: first compiles and recompiles alike."""
    return int(torch._dynamo.utils.counters["stats"]["unique_graphs"])
