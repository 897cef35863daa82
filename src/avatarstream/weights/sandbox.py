"""A weights folder is a sandbox: every file a loader opens from it must resolve inside it.

A checkpoint index can name a shard ``../../elsewhere/x.safetensors`` or ``/etc/x``, and any file of a folder can be a
symlink to anywhere; a loader that follows them reads files the user never pointed at. :func:`inside` is the one
policy every loader applies before it opens a path from a weights folder:

- the path, with every symlink resolved, must lie inside the folder (itself resolved, so a folder that is a symlink to
  another disk works as a whole);
- except a symlink in a Hugging Face cache: a file under ``.../models--ORG--NAME/snapshots/<rev>/`` may resolve into
  ``.../models--ORG--NAME/blobs/`` of the same repository, which is how ``huggingface_hub`` lays out its downloads.

Anything else is one ``InputError`` that names the path, where it leads, and what to do.
"""

from __future__ import annotations

from pathlib import Path

from avatarstream.errors import InputError

HF_REPO_PREFIX = "models--"


def inside(folder: Path, path: Path) -> Path:
    """``path`` unchanged if it resolves inside ``folder`` (or into the same Hugging Face cache repository's blobs/)."""
    root = folder.resolve()
    target = path.resolve()
    if target.is_relative_to(root) or _in_hf_blobs(root, target):
        return path
    raise InputError(
        f"{path} leads to {target}, outside the weights folder {folder}; avatarstream opens only files inside the folder "
        "you name (symlinks included; a Hugging Face cache's snapshot links into its blobs/ are fine): copy the file "
        "into the folder, or name the folder it is in"
    )


def all_inside(folder: Path) -> Path:
    """``folder`` if every entry in it resolves inside it: for folders a library reads by itself (tokenizers, configs)."""
    if folder.is_dir():
        for entry in sorted(folder.iterdir()):
            inside(folder, entry)
    return folder


def _in_hf_blobs(root: Path, target: Path) -> bool:
    """``root`` lies in ``models--X/snapshots/<rev>`` and ``target`` in ``models--X/blobs/``."""
    parts = root.parts
    for i in range(len(parts) - 2):
        if parts[i].startswith(HF_REPO_PREFIX) and parts[i + 1] == "snapshots":
            blobs = Path(*parts[: i + 1]) / "blobs"
            return target != blobs and target.is_relative_to(blobs)
    return False
