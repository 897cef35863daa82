"""Reading checkpoints as users download them: safetensors (sharded or not) and weights-only ``.pth``.

Every reader turns a broken or wrong file into one ``InputError`` that names
the file and what was expected, so the CLI can print it and exit 2.
"""
