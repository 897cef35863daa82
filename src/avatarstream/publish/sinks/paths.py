"""Check output locations before any encoding starts, with messages that say what to do."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from avatarstream.errors import PublishError


def prepare_file(path: Path, option: str) -> None:
    """Create the parent folder and prove ``path`` can be written (it is created empty)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb"):
            pass
    except (FileExistsError, NotADirectoryError) as err:
        raise unwritable(path, "a part of its folder path is a file, not a folder", option) from err
    except OSError as err:
        raise unwritable(path, err.strerror or str(err), option) from err


def prepare_directory(path: Path, option: str) -> None:
    """Create the folder and prove files can be created in it."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except (FileExistsError, NotADirectoryError) as err:
        raise unwritable(path, "it or a part of its path is a file, not a folder", option) from err
    except OSError as err:
        raise unwritable(path, err.strerror or str(err), option) from err
    if not os.access(path, os.W_OK):
        raise unwritable(path, "Permission denied", option)


def unwritable(path: Path, reason: str, option: str) -> PublishError:
    return PublishError(f"cannot write output {path}: {reason}; choose a writable path with {option}")
