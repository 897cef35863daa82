"""MP4 file output: plain (index at the end) or fragmented (playable while it grows)."""

from __future__ import annotations

import os
from pathlib import Path

from avatarstream.publish.muxer import PacketMuxer
from avatarstream.publish.packets import StreamInfo
from avatarstream.publish.sinks.muxed import MuxedSink
from avatarstream.publish.sinks.paths import prepare_file

# A fragment per keyframe (one per GOP, one second by default) and a moov with no
# samples up front: readers can play the file while it is written, and the muxer
# keeps no per-sample index in memory, so memory stays flat however long the run
# is. delay_moov writes that moov with the first fragment, once the AAC priming is
# known, so its edit list keeps audio and video aligned (without it FFmpeg shifts
# every video frame but the first by the priming). flush_packets pushes each
# fragment to disk as soon as it is complete.
#: The names an MP4 file may end with (the muxer writes MP4 whatever the name, so any other is refused before a render).
EXTENSIONS = (".mp4", ".m4v")
FRAGMENTED_OPTIONS = {"movflags": "frag_keyframe+empty_moov+delay_moov+default_base_moof", "flush_packets": "1"}


class Mp4FileSink(MuxedSink):
    """Writes ``path``; never drops a packet (lossless) and is finalized by ``close``.

    A plain MP4 keeps its sample index in memory until ``close`` writes it
    (about 0.3 MB per minute); ``fragmented=True`` writes it fragment by
    fragment instead. No ``+faststart``: that rewrites the whole file at close,
    a second pass that can fail after the data is safely written.
    """

    lossless = True
    reconnect = False

    def __init__(self, path: str | os.PathLike[str], fragmented: bool = False, option: str = "--out") -> None:
        self.path = Path(path)
        self.fragmented = fragmented
        super().__init__(f"mp4:{self.path}")
        prepare_file(self.path, option)

    def _open_muxer(self, info: StreamInfo) -> PacketMuxer:
        return PacketMuxer(str(self.path), "mp4", info, FRAGMENTED_OPTIONS if self.fragmented else None)
