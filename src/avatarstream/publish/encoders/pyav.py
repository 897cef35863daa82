"""The default backend: libx264 and FFmpeg's AAC encoder through PyAV, in process."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import av
import numpy as np

from avatarstream.errors import PublishError
from avatarstream.publish.encoders.base import Encoder
from avatarstream.publish.h264 import avcc_from_annexb, decoder_config_from_annexb
from avatarstream.publish.packets import EncodedPacket, StreamInfo
from avatarstream.publish.settings import EncoderSettings


class PyAvEncoder(Encoder):
    """libx264 with a global header (SPS/PPS once, in avcC) and AAC, fed from the caller's thread."""

    name = "pyav"

    def __init__(self, settings: EncoderSettings) -> None:
        super().__init__(settings)
        try:
            self._video = _video_context(settings)
            self._audio = _audio_context(settings)
        except av.error.FFmpegError as err:
            raise PublishError(f"cannot start the H.264/AAC encoder: {err}") from err
        self._info = StreamInfo(
            width=settings.width,
            height=settings.height,
            fps=settings.fps,
            video_extradata=decoder_config_from_annexb(bytes(self._video.extradata or b"")),
            audio_rate=settings.audio_rate,
            audio_channels=settings.audio_channels,
            audio_extradata=bytes(self._audio.extradata or b""),
        )
        self._fifo = av.AudioFifo()
        self._samples_encoded = 0

    @property
    def stream_info(self) -> StreamInfo:
        return self._info

    def _encode(self, frames: np.ndarray, audio: np.ndarray) -> list[EncodedPacket]:
        packets: list[EncodedPacket] = []
        for index, image in enumerate(frames, start=self.frames_encoded):
            frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(image), format="rgb24")
            frame.pts = index
            packets += self._video_packets(self._video.encode(frame))
        if audio.shape[1]:
            chunk = av.AudioFrame.from_ndarray(audio, format="fltp", layout=self._audio.layout.name)
            chunk.sample_rate = self.settings.audio_rate
            self._fifo.write(chunk)
        for audio_frame in self._fifo.read_many(self._audio.frame_size):
            packets += self._encode_audio(audio_frame)
        return packets

    def _flush(self) -> list[EncodedPacket]:
        packets: list[EncodedPacket] = []
        rest = self._fifo.read()  # the last, partial AAC frame
        if rest is not None:
            packets += self._encode_audio(rest)
        packets += self._video_packets(self._video.encode(None))
        packets += self._audio_packets(self._audio.encode(None))
        return packets

    def close(self) -> None:
        """Free the codecs now: libx264 holds worker threads and frame buffers until its context is freed, and whoever holds this
        encoder (a server session) may be garbage only to the cyclic collector, which runs when it likes."""
        for name in ("_video", "_audio", "_fifo"):
            vars(self).pop(name, None)

    def _encode_audio(self, frame: av.AudioFrame) -> list[EncodedPacket]:
        frame.pts = self._samples_encoded
        frame.time_base = Fraction(1, self.settings.audio_rate)
        self._samples_encoded += frame.samples
        return self._audio_packets(self._audio.encode(frame))

    def _video_packets(self, packets: list[av.Packet[Any]]) -> list[EncodedPacket]:
        time_base = Fraction(1, self.settings.fps)
        return [EncodedPacket("video", avcc_from_annexb(bytes(p)), *_timestamps(p), time_base, p.is_keyframe) for p in packets]

    def _audio_packets(self, packets: list[av.Packet[Any]]) -> list[EncodedPacket]:
        time_base = Fraction(1, self.settings.audio_rate)
        return [EncodedPacket("audio", bytes(p), *_timestamps(p), time_base, True) for p in packets]


def _timestamps(packet: av.Packet[Any]) -> tuple[int, int]:
    """pts and dts of an encoded packet; the encoders always set both."""
    if packet.pts is None or packet.dts is None:
        raise PublishError(f"the encoder gave a packet without a timestamp (pts={packet.pts}, dts={packet.dts})")
    return packet.pts, packet.dts


def _video_context(settings: EncoderSettings) -> av.VideoCodecContext:
    ctx = av.CodecContext.create("libx264", "w")
    ctx.width, ctx.height, ctx.pix_fmt = settings.width, settings.height, "yuv420p"
    ctx.time_base = Fraction(1, settings.fps)
    ctx.framerate = Fraction(settings.fps)
    ctx.flags |= av.codec.context.Flags.global_header
    ctx.options = settings.x264_options()
    ctx.open()
    return ctx


def _audio_context(settings: EncoderSettings) -> av.AudioCodecContext:
    ctx = av.CodecContext.create("aac", "w")
    ctx.sample_rate = settings.audio_rate
    ctx.layout = "stereo" if settings.audio_channels == 2 else "mono"
    ctx.format = "fltp"
    ctx.time_base = Fraction(1, settings.audio_rate)
    ctx.flags |= av.codec.context.Flags.global_header
    ctx.open()
    return ctx
