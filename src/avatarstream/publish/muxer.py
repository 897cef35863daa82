"""Write already-encoded packets into an FFmpeg container (MP4, fMP4, HLS, FLV): remux, never re-encode."""

from __future__ import annotations

import io
from fractions import Fraction

import av

from avatarstream.publish.packets import EncodedPacket, StreamInfo


class PacketMuxer:
    """One FFmpeg output whose two streams are set up from a StreamInfo, not from an encoder."""

    def __init__(self, target: str, format: str, info: StreamInfo, options: dict[str, str] | None = None) -> None:
        self._container = av.open(target, "w", format=format, options=options or {})
        try:
            self._video, self._audio = _add_streams(self._container, info)
            self._container.start_encoding()
        except BaseException:
            self._container.close()
            raise

    def write(self, packet: EncodedPacket) -> None:
        out = av.Packet(packet.data)
        out.pts, out.dts, out.time_base = packet.pts, packet.dts, packet.time_base
        out.is_keyframe = packet.keyframe
        out.stream = self._video if packet.kind == "video" else self._audio
        self._container.mux(out)

    def close(self) -> None:
        """Write the trailer (MP4 index, last HLS segment and playlist) and close the output."""
        self._container.close()


def _add_streams(container: av.container.OutputContainer, info: StreamInfo) -> tuple[av.stream.Stream, av.stream.Stream]:
    """H.264 and AAC streams carrying ``info``'s headers.

    PyAV only lets a stream take codec parameters from a template stream, so the
    templates come from a throwaway container that is never written; the
    copies are marked as initialized and their codecs are never opened.
    """
    with av.open(io.BytesIO(), "w", format="mp4") as templates:
        video = container.add_stream_from_template(templates.add_stream("libx264", rate=info.fps), opaque=True)
        audio = container.add_stream_from_template(templates.add_stream("aac", rate=info.audio_rate), opaque=True)
    video.codec_context.width, video.codec_context.height = info.width, info.height
    video.codec_context.extradata = info.video_extradata
    video.time_base = Fraction(1, info.fps)
    audio.codec_context.sample_rate = info.audio_rate
    audio.codec_context.layout = "stereo" if info.audio_channels == 2 else "mono"
    audio.codec_context.extradata = info.audio_extradata
    audio.time_base = Fraction(1, info.audio_rate)
    return video, audio
