"""The GStreamer backend: appsrc -> x264enc -> h264parse and appsrc -> avenc_aac -> aacparse, in process.

In process through PyGObject, not gst-launch over pipes: appsink hands back
each access unit whole, with its timestamps, its keyframe flag and the
avcC / AudioSpecificConfig headers in its caps, so nothing has to be re-framed
or re-timed from a byte stream. Input timestamps are set from the frame index
and the sample count, as in every backend.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, NoReturn

import numpy as np

from avatarstream.errors import PublishError
from avatarstream.publish.encoders.base import Encoder
from avatarstream.publish.packets import EncodedPacket, PacketKind, StreamInfo
from avatarstream.publish.settings import EncoderSettings

# FFmpeg's AAC encoder through gst-libav. Its first packet is the encoder's
# priming frame, stamped 0 by GStreamer; shifting by it gives the same timeline
# as the PyAV backend (first packet at -1024). voaacenc is not used: its priming
# is not signalled and it was measured to lose the last partial frame.
AAC_PRIMING_SAMPLES = 1024
AAC_FRAME = 1024
REQUIRED_ELEMENTS = ("appsrc", "appsink", "videoconvert", "audioconvert", "x264enc", "h264parse", "avenc_aac", "aacparse")
SETUP_HINT = "run scripts/system-deps.sh (GStreamer plugins) and pip install -e '.[gstreamer]' (PyGObject), or just run make test"
PULL_TIMEOUT_S = 10.0  # an encoder that produces nothing for this long has failed


def _gst() -> Any:
    """Import and initialize GStreamer, or say what is missing."""
    try:
        import gi

        gi.require_version("Gst", "1.0")
        gi.require_version("GstApp", "1.0")
        from gi.repository import Gst, GstApp  # noqa: F401 - GstApp registers the appsrc/appsink API
    except (ImportError, ValueError) as err:
        raise PublishError(f"the GStreamer encoder is not available ({err}); {SETUP_HINT}") from err
    Gst.init(None)
    return Gst


def gstreamer_missing() -> str | None:
    """Why the GStreamer backend cannot run here, or None when it can."""
    try:
        Gst = _gst()
    except PublishError as err:
        return str(err)
    missing = [e for e in REQUIRED_ELEMENTS if Gst.ElementFactory.find(e) is None]
    return f"GStreamer elements missing: {', '.join(missing)}; {SETUP_HINT}" if missing else None


class GstEncoder(Encoder):
    """One GStreamer pipeline with a video and an audio branch; packets are pulled after each push."""

    name = "gstreamer"

    def __init__(self, settings: EncoderSettings) -> None:
        super().__init__(settings)
        missing = gstreamer_missing()
        if missing:
            raise PublishError(missing)
        self._Gst = Gst = _gst()
        try:
            self._pipeline = Gst.parse_launch(_description(settings))
        except Exception as err:  # GLib.Error
            raise PublishError(f"cannot build the GStreamer encoder: {err}") from err
        self._vsrc = self._pipeline.get_by_name("vsrc")
        self._asrc = self._pipeline.get_by_name("asrc")
        self._vsink = self._pipeline.get_by_name("vsink")
        self._asink = self._pipeline.get_by_name("asink")
        self._video_headers: bytes | None = None
        self._audio_headers: bytes | None = None
        self._samples_sent = 0
        self._out = {"video": 0, "audio": 0}  # packets pulled so far
        self._closed = False
        if self._pipeline.set_state(Gst.State.PLAYING) == Gst.StateChangeReturn.FAILURE:
            self._raise_bus_error("cannot start the GStreamer encoder")

    @property
    def stream_info(self) -> StreamInfo | None:
        if self._video_headers is None or self._audio_headers is None:
            return None
        s = self.settings
        return StreamInfo(s.width, s.height, s.fps, self._video_headers, s.audio_rate, s.audio_channels, self._audio_headers)

    def _encode(self, frames: np.ndarray, audio: np.ndarray) -> list[EncodedPacket]:
        Gst, fps = self._Gst, self.settings.fps
        for index, image in enumerate(frames, start=self.frames_encoded):
            buffer = Gst.Buffer.new_wrapped(np.ascontiguousarray(image).tobytes())
            buffer.pts = Gst.util_uint64_scale(index, Gst.SECOND, fps)
            buffer.duration = Gst.util_uint64_scale(index + 1, Gst.SECOND, fps) - buffer.pts
            self._push(self._vsrc, buffer)
        if audio.shape[1]:
            buffer = Gst.Buffer.new_wrapped(np.ascontiguousarray(audio.T).tobytes())  # interleaved F32LE
            buffer.pts = Gst.util_uint64_scale(self._samples_sent, Gst.SECOND, self.settings.audio_rate)
            self._samples_sent += audio.shape[1]
            self._push(self._asrc, buffer)
        # Wait for what this input must produce, so latency stays within the chunk:
        # x264 with tune=zerolatency returns every frame's access unit at once, and
        # AAC a packet per 1024 samples, one frame behind (measured; the same as PyAV).
        packets = self._pull(self._vsink, "video", until=self.frames_encoded + len(frames))
        return packets + self._pull(self._asink, "audio", until=self._samples_sent // AAC_FRAME - 1)

    def _flush(self) -> list[EncodedPacket]:
        self._vsrc.end_of_stream()
        self._asrc.end_of_stream()
        return self._pull_to_eos(self._vsink, "video") + self._pull_to_eos(self._asink, "audio")

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._pipeline.set_state(self._Gst.State.NULL)

    def _push(self, src: Any, buffer: Any) -> None:
        if src.push_buffer(buffer) != self._Gst.FlowReturn.OK:
            self._raise_bus_error("the GStreamer encoder stopped taking input")

    def _pull(self, sink: Any, kind: PacketKind, until: int) -> list[EncodedPacket]:
        """Pull until ``until`` packets of this kind came out in all, then whatever else is ready."""
        packets: list[EncodedPacket] = []
        while True:
            waiting = self._out[kind] < until
            sample = sink.try_pull_sample(int(PULL_TIMEOUT_S * self._Gst.SECOND) if waiting else 0)
            if sample is None:
                if waiting:
                    self._raise_bus_error(f"the GStreamer encoder returned no {kind} within {PULL_TIMEOUT_S:g} s")
                return packets
            packets.append(self._packet(sample, kind))

    def _pull_to_eos(self, sink: Any, kind: PacketKind) -> list[EncodedPacket]:
        packets = []
        while not sink.is_eos():
            sample = sink.try_pull_sample(int(PULL_TIMEOUT_S * self._Gst.SECOND))
            if sample is None:
                if sink.is_eos():
                    break
                self._raise_bus_error(f"the GStreamer encoder did not finish within {PULL_TIMEOUT_S:g} s")
            packets.append(self._packet(sample, kind))
        return packets

    def _packet(self, sample: Any, kind: PacketKind) -> EncodedPacket:
        Gst = self._Gst
        buffer = sample.get_buffer()
        self._out[kind] += 1
        if kind == "video":
            time_base = Fraction(1, self.settings.fps)
            if self._video_headers is None:
                self._video_headers = _codec_data(sample)
        else:
            time_base = Fraction(1, self.settings.audio_rate)
            if self._audio_headers is None:
                self._audio_headers = _codec_data(sample)
        # Encoders may offset their output (x264enc starts at 1000 h so that DTS
        # never goes negative); the segment maps it back to the input's time.
        segment = sample.get_segment()
        pts = _ticks(segment.to_running_time(Gst.Format.TIME, buffer.pts), time_base, Gst)
        dts = pts
        if buffer.dts != Gst.CLOCK_TIME_NONE:
            sign, running = segment.to_running_time_full(Gst.Format.TIME, buffer.dts)
            dts = sign * _ticks(running, time_base, Gst)
        if kind == "audio":
            pts, dts = pts - AAC_PRIMING_SAMPLES, dts - AAC_PRIMING_SAMPLES
        keyframe = kind == "audio" or not buffer.has_flags(Gst.BufferFlags.DELTA_UNIT)
        return EncodedPacket(kind, buffer.extract_dup(0, buffer.get_size()), pts, dts, time_base, keyframe)

    def _raise_bus_error(self, fallback: str) -> NoReturn:
        message = self._pipeline.get_bus().pop_filtered(self._Gst.MessageType.ERROR)
        if message is not None:
            err, debug = message.parse_error()
            raise PublishError(f"GStreamer encoder failed: {err.message} ({debug})")
        raise PublishError(fallback)


def _description(settings: EncoderSettings) -> str:
    """The gst-launch description of the two branches, from the encoder settings."""
    s = settings
    x264 = (
        f"x264enc speed-preset={s.preset} tune=zerolatency pass=qual quantizer={s.crf} "
        f"key-int-max={s.gop} bframes=0 option-string=scenecut=0:min-keyint={s.gop}"
    )
    return (
        f"appsrc name=vsrc format=time caps=video/x-raw,format=RGB,width={s.width},height={s.height},"
        f"framerate={s.fps}/1 ! videoconvert ! video/x-raw,format=I420 ! {x264} ! "
        "h264parse ! video/x-h264,stream-format=avc,alignment=au ! appsink name=vsink sync=false "
        f"appsrc name=asrc format=time caps=audio/x-raw,format=F32LE,layout=interleaved,rate={s.audio_rate},"
        f"channels={s.audio_channels} ! audioconvert ! avenc_aac ! aacparse ! "
        "audio/mpeg,mpegversion=4,stream-format=raw ! appsink name=asink sync=false"
    )


def _codec_data(sample: Any) -> bytes:
    data = sample.get_caps().get_structure(0).get_value("codec_data")
    if data is None:
        raise PublishError("the GStreamer encoder gave no codec headers (codec_data)")
    headers: bytes = data.extract_dup(0, data.get_size())
    return headers


def _ticks(ns: int, time_base: Fraction, Gst: Any) -> int:
    """Nanoseconds to the nearest tick of ``time_base``."""
    return round(Fraction(ns, Gst.SECOND) / time_base)
