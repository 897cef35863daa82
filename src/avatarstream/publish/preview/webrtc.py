"""WebRTC preview through aiortc: the encoder's H.264 passed through, the sound as Opus.

aiortc's RTCRtpSender packetizes whatever a track's ``recv`` returns: a decoded
frame is encoded first, but an ``av.Packet`` is only split into RTP payloads
(``H264Encoder.pack``). So each viewer gets a video track that returns the
already encoded access units, converted to Annex B with SPS/PPS in front of
every keyframe so that a viewer can join at any GOP. WebRTC has no AAC: when
a viewer asks for audio, the AAC packets are decoded (once, for all viewers)
and aiortc encodes them to Opus. A viewer's two tracks pace their media
against one clock, so sound and picture stay in sync.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from fractions import Fraction
from typing import Any

import av
from aiortc import MediaStreamTrack, RTCPeerConnection, RTCSessionDescription
from aiortc.sdp import SessionDescription

from avatarstream.errors import PublishError
from avatarstream.publish.h264 import annexb_from_avcc, parameter_sets
from avatarstream.publish.ice import rtc_configuration
from avatarstream.publish.packets import EncodedPacket, StreamInfo

log = logging.getLogger(__name__)

VIEWER_QUEUE = 64  # access units (or audio frames) buffered per viewer track before it drops
ANSWER_TIMEOUT_S = 15.0
OPUS_RATE = 48000  # what aiortc's Opus encoder takes: s16 stereo at 48 kHz


class MediaClock:
    """One viewer's mapping of media time to wall time, shared by its tracks (batch runs encode faster than real time)."""

    def __init__(self) -> None:
        self._anchor: tuple[float, float] | None = None  # (wall time, media time) of the first item sent

    async def wait_for(self, media_s: float) -> None:
        if self._anchor is None:
            self._anchor = (time.monotonic(), media_s)
        ahead = self._anchor[0] + (media_s - self._anchor[1]) - time.monotonic()
        if ahead > 0:
            await asyncio.sleep(ahead)


class PassthroughTrack(MediaStreamTrack):
    """A video track whose ``recv`` returns encoded H.264 access units, paced to their timestamps."""

    kind = "video"

    def __init__(self, clock: MediaClock | None = None) -> None:
        super().__init__()
        self._queue: asyncio.Queue[av.Packet[Any]] = asyncio.Queue(maxsize=VIEWER_QUEUE)
        self._waiting_for_keyframe = True
        self._clock = clock or MediaClock()
        self.dropped = 0

    def offer(self, data: bytes, pts: int, time_base: Fraction, keyframe: bool) -> None:
        """Queue an access unit (on the loop's thread); a full queue skips to the next keyframe."""
        if self._waiting_for_keyframe and not keyframe:
            self.dropped += 1
            return
        packet = av.Packet(data)
        packet.pts = packet.dts = pts
        packet.time_base = time_base
        try:
            self._queue.put_nowait(packet)
            self._waiting_for_keyframe = False
        except asyncio.QueueFull:
            self.dropped += 1
            self._waiting_for_keyframe = True

    async def recv(self) -> av.Packet[Any]:
        packet = await self._queue.get()
        await self._clock.wait_for(_media_s(packet))
        return packet


def _media_s(item: av.Packet[Any] | av.AudioFrame) -> float:
    """Where a queued packet or frame sits on the media timeline; everything the tracks are offered is stamped."""
    if item.pts is None or item.time_base is None:
        raise PublishError("a preview packet or frame has no timestamp, so it cannot be paced")
    return float(item.pts * item.time_base)


class SoundTrack(MediaStreamTrack):
    """An audio track whose ``recv`` returns decoded s16 stereo 48 kHz frames (aiortc encodes them to Opus)."""

    kind = "audio"

    def __init__(self, clock: MediaClock) -> None:
        super().__init__()
        self._queue: asyncio.Queue[av.AudioFrame] = asyncio.Queue(maxsize=VIEWER_QUEUE)
        self._clock = clock
        self.dropped = 0

    def offer(self, frame: av.AudioFrame) -> None:
        try:
            self._queue.put_nowait(frame)
        except asyncio.QueueFull:
            self.dropped += 1

    async def recv(self) -> av.AudioFrame:
        frame = await self._queue.get()
        await self._clock.wait_for(_media_s(frame))
        return frame


class WebRtcRelay:
    """Runs aiortc on its own event loop thread and fans video packets out to every viewer."""

    def __init__(self, ice_servers: tuple[str, ...] = ()) -> None:
        self._configuration = rtc_configuration(ice_servers)  # none named: host candidates only (ice.py)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="preview-webrtc", daemon=True)
        self._thread.start()
        self._peers: set[RTCPeerConnection] = set()
        self._tracks: set[PassthroughTrack] = set()
        self._sound_tracks: set[SoundTrack] = set()
        self._parameter_sets: list[bytes] = []
        self._time_base = Fraction(1, 25)
        self._info: StreamInfo | None = None
        self._sound: _SoundDecoder | None = None

    def set_stream(self, info: StreamInfo) -> None:
        self._parameter_sets = parameter_sets(info.video_extradata)
        self._time_base = Fraction(1, info.fps)
        self._info, self._sound = info, None

    def push(self, packet: EncodedPacket) -> None:
        """Hand one packet to every viewer (called from the sink's thread); audio only to viewers that asked for it."""
        if packet.kind == "audio":
            self._push_sound(packet)
            return
        if not self._tracks:
            return
        prefix = self._parameter_sets if packet.keyframe else ()
        data = annexb_from_avcc(packet.data, prefix)
        self._loop.call_soon_threadsafe(self._offer_all, data, packet.pts, packet.time_base, packet.keyframe)

    def _push_sound(self, packet: EncodedPacket) -> None:
        if not self._sound_tracks or self._info is None:
            self._sound = None  # a later viewer starts a fresh decoder
            return
        if self._sound is None:
            self._sound = _SoundDecoder(self._info)
        for frame in self._sound.decode(packet):
            self._loop.call_soon_threadsafe(self._offer_sound, frame)

    def _offer_sound(self, frame: av.AudioFrame) -> None:
        for track in self._sound_tracks:
            track.offer(frame)

    def answer(self, sdp: str, kind: str) -> RTCSessionDescription:
        """Answer a browser's offer (called from an HTTP thread); blocks until ICE gathering is done."""
        future = asyncio.run_coroutine_threadsafe(self._answer(RTCSessionDescription(sdp=sdp, type=kind)), self._loop)
        return future.result(ANSWER_TIMEOUT_S)

    @property
    def viewers(self) -> int:
        return len(self._tracks)

    def close(self) -> None:
        """Hang up every viewer and stop the loop."""
        if not self._loop.is_running():
            return
        asyncio.run_coroutine_threadsafe(self._close_all(), self._loop).result(ANSWER_TIMEOUT_S)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(ANSWER_TIMEOUT_S)

    def _offer_all(self, data: bytes, pts: int, time_base: Fraction, keyframe: bool) -> None:
        for track in self._tracks:
            track.offer(data, pts, time_base, keyframe)

    async def _answer(self, offer: RTCSessionDescription) -> RTCSessionDescription:
        pc = RTCPeerConnection(self._configuration)
        clock = MediaClock()
        track = PassthroughTrack(clock)
        sound = SoundTrack(clock) if _offers(offer.sdp, "audio") else None
        self._peers.add(pc)

        @pc.on("connectionstatechange")
        async def _state() -> None:
            if pc.connectionState in ("failed", "closed"):
                await self._hang_up(pc, track, sound)

        await pc.setRemoteDescription(offer)  # the page offers receive-only video (and audio) transceivers
        pc.addTrack(track)
        if sound is not None:
            pc.addTrack(sound)
        answer = await pc.createAnswer()
        if _chosen_codec(answer.sdp) != "video/H264":
            await self._hang_up(pc, track, sound)
            raise ValueError("the offer must put H.264 first (setCodecPreferences); the stream is not re-encoded")
        await pc.setLocalDescription(answer)
        self._tracks.add(track)
        if sound is not None:
            self._sound_tracks.add(sound)
        return pc.localDescription

    async def _hang_up(self, pc: RTCPeerConnection, track: PassthroughTrack, sound: SoundTrack | None) -> None:
        self._tracks.discard(track)
        if sound is not None:
            self._sound_tracks.discard(sound)
        self._peers.discard(pc)
        await pc.close()

    async def _close_all(self) -> None:
        for pc in list(self._peers):
            await pc.close()
        self._peers.clear()
        self._tracks.clear()
        self._sound_tracks.clear()


class _SoundDecoder:
    """AAC packets -> s16 stereo 48 kHz frames with media timestamps, for aiortc's Opus encoder."""

    def __init__(self, info: StreamInfo) -> None:
        self._codec = av.CodecContext.create("aac", "r")
        self._codec.extradata = info.audio_extradata
        self._codec.sample_rate = info.audio_rate
        self._codec.layout = "stereo" if info.audio_channels == 2 else "mono"
        self._resampler = av.AudioResampler(format="s16", layout="stereo", rate=OPUS_RATE)

    def decode(self, packet: EncodedPacket) -> list[av.AudioFrame]:
        raw = av.Packet(packet.data)
        raw.pts = raw.dts = packet.pts
        raw.time_base = packet.time_base
        frames = []
        for decoded in self._codec.decode(raw):
            decoded.pts, decoded.time_base = packet.pts, packet.time_base
            frames += self._resampler.resample(decoded)
        return frames


def _offers(sdp: str, kind: str) -> bool:
    return any(media.kind == kind for media in SessionDescription.parse(sdp).media)


def _chosen_codec(sdp: str) -> str | None:
    """The codec an answer settles on: the first one of its video section."""
    for media in SessionDescription.parse(sdp).media:
        if media.kind == "video" and media.rtp.codecs:
            return media.rtp.codecs[0].mimeType
    return None
