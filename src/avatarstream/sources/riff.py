"""A WAV file's chunk sizes, checked before FFmpeg reads it.

FFmpeg's WAV demuxer allocates what a header chunk claims (a LIST chunk's INFO entries are read into buffers of their
stated size, bounded only by the LIST's own claim), so an 84-byte file whose LIST claims 4 GiB makes it allocate
gigabytes. Every chunk but the samples must fit in the file; the samples may claim more (a cut file plays what is there).
"""

from __future__ import annotations

import os
import struct


def oversized_chunk(path: str | os.PathLike[str]) -> str | None:
    """What is wrong with a RIFF/WAVE file whose header chunk claims more bytes than the file holds; None for a file
    whose chunks fit, or one that is not a WAV."""
    size = os.path.getsize(path)
    with open(path, "rb") as file:
        head = file.read(12)
        if len(head) < 12 or head[:4] != b"RIFF" or head[8:] != b"WAVE":
            return None
        offset = 12
        while offset + 8 <= size:
            file.seek(offset)
            kind, length = struct.unpack("<4sI", file.read(8))
            left = size - offset - 8
            if length > left:
                return None if kind == b"data" else f"its {kind.decode('latin-1')!r} chunk claims {length} bytes where {left} are left"
            offset += 8 + length + (length & 1)
    return None
