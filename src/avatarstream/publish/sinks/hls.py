"""Live HLS output: fMP4 segments of one GOP each and a playlist a browser can follow."""

from __future__ import annotations

import os
from pathlib import Path

from avatarstream.publish.muxer import PacketMuxer
from avatarstream.publish.packets import StreamInfo
from avatarstream.publish.sinks.muxed import MuxedSink
from avatarstream.publish.sinks.paths import prepare_directory

PLAYLIST = "index.m3u8"
INIT_SEGMENT = "init.mp4"


class HlsSink(MuxedSink):
    """Writes ``directory/index.m3u8``, ``init.mp4`` and ``seg00000.m4s`` ... with FFmpeg's HLS muxer.

    Segments are cut at the first keyframe after ``segment_s``; with the
    encoder's one-second GOP that is one GOP per segment. ``window`` keeps
    the last N segments (older ones deleted) for endless sessions; None keeps
    them all (an EVENT playlist: a viewer can seek back to the start). The
    muxer writes the playlist and each segment to a temporary name and renames
    it, so a player never reads a half-written file. Local disk: lossless.
    """

    lossless = True
    reconnect = False

    def __init__(self, directory: str | os.PathLike[str], window: int | None = None, segment_s: float = 1.0) -> None:
        if window is not None and window < 3:
            raise ValueError(f"an HLS window needs at least 3 segments, got {window}")
        self.directory = Path(directory)
        self.window = window
        self.segment_s = segment_s
        super().__init__(f"hls:{self.directory}")
        prepare_directory(self.directory, "--hls")

    @property
    def playlist(self) -> Path:
        return self.directory / PLAYLIST

    def _open_muxer(self, info: StreamInfo) -> PacketMuxer:
        flags = ["independent_segments", "temp_file"]
        options = {
            "hls_time": str(self.segment_s),
            "hls_segment_type": "fmp4",
            "hls_fmp4_init_filename": INIT_SEGMENT,
            "hls_segment_filename": str(self.directory / "seg%05d.m4s"),
        }
        if self.window is None:
            options |= {"hls_list_size": "0", "hls_playlist_type": "event"}
        else:
            options["hls_list_size"] = str(self.window)
            flags.append("delete_segments")
        options["hls_flags"] = "+".join(flags)
        return PacketMuxer(str(self.playlist), "hls", info, options)
