"""Model families: each assembles its modules, stages and chunk plan into a Pipeline (docs/families.md).

A family is chosen by name (``--model``) through the registry
(``families/registry.py``); the loop, memory contract, runtime and publishing
come from the framework. Every family offers the interface of
``families.base.Family`` and declares its own options (``families.options``).
"""

from avatarstream.families import torchao_logs

torchao_logs.quiet()  # before any family imports diffusers, which imports torchao (families/torchao_logs.py)
