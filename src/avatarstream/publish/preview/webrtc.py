"""WebRTC preview through aiortc, passing the encoder's H.264 through without re-encoding.

aiortc's RTCRtpSender packetizes whatever a track's ``recv`` returns: a decoded
frame is encoded first, but an ``av.Packet`` is only split into RTP payloads
(``H264Encoder.pack``). So each viewer gets a track that returns the already
encoded access units, converted to Annex B with SPS/PPS in front of every
keyframe so that a viewer can join at any GOP. Audio is not sent: WebRTC has
no AAC, and carrying it would mean re-encoding to Opus; the HLS preview plays
the sound.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from fractions import Fraction

import av
from aiortc import MediaStreamTrack, RTCPeerConnection, RTCSessionDescription
from aiortc.sdp import SessionDescription

from avatarstream.publish.h264 import annexb_from_avcc, parameter_sets
from avatarstream.publish.packets import EncodedPacket, StreamInfo

log = logging.getLogger(__name__)

VIEWER_QUEUE = 64  # access units buffered per viewer before it skips to the next keyframe
ANSWER_TIMEOUT_S = 15.0


class PassthroughTrack(MediaStreamTrack):
    """A video track whose ``recv`` returns encoded H.264 access units, paced to their timestamps."""

    kind = "video"

    def __init__(self) -> None:
        super().__init__()
        self._queue: asyncio.Queue[av.Packet] = asyncio.Queue(maxsize=VIEWER_QUEUE)
        self._waiting_for_keyframe = True
        self._clock: tuple[float, float] | None = None  # (wall time, media time) of the first packet sent
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

    async def recv(self) -> av.Packet:  # type: ignore[override]
        packet = await self._queue.get()
        media_s = float(packet.pts * packet.time_base)
        if self._clock is None:
            self._clock = (time.monotonic(), media_s)
        ahead = self._clock[0] + (media_s - self._clock[1]) - time.monotonic()
        if ahead > 0:  # batch runs encode faster than real time; a viewer sees real time
            await asyncio.sleep(ahead)
        return packet


class WebRtcRelay:
    """Runs aiortc on its own event loop thread and fans video packets out to every viewer."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="preview-webrtc", daemon=True)
        self._thread.start()
        self._peers: set[RTCPeerConnection] = set()
        self._tracks: set[PassthroughTrack] = set()
        self._parameter_sets: list[bytes] = []
        self._time_base = Fraction(1, 25)

    def set_stream(self, info: StreamInfo) -> None:
        self._parameter_sets = parameter_sets(info.video_extradata)
        self._time_base = Fraction(1, info.fps)

    def push(self, packet: EncodedPacket) -> None:
        """Hand one packet to every viewer (called from the sink's thread); audio is skipped."""
        if packet.kind != "video" or not self._tracks:
            return
        prefix = self._parameter_sets if packet.keyframe else ()
        data = annexb_from_avcc(packet.data, prefix)
        self._loop.call_soon_threadsafe(self._offer_all, data, packet.pts, packet.time_base, packet.keyframe)

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
        pc = RTCPeerConnection()
        track = PassthroughTrack()
        self._peers.add(pc)

        @pc.on("connectionstatechange")
        async def _state() -> None:
            if pc.connectionState in ("failed", "closed"):
                await self._hang_up(pc, track)

        await pc.setRemoteDescription(offer)  # the page offers one receive-only video transceiver
        pc.addTrack(track)
        answer = await pc.createAnswer()
        if _chosen_codec(answer.sdp) != "video/H264":
            await self._hang_up(pc, track)
            raise ValueError("the offer must put H.264 first (setCodecPreferences); the stream is not re-encoded")
        await pc.setLocalDescription(answer)
        self._tracks.add(track)
        return pc.localDescription

    async def _hang_up(self, pc: RTCPeerConnection, track: PassthroughTrack) -> None:
        self._tracks.discard(track)
        self._peers.discard(pc)
        await pc.close()

    async def _close_all(self) -> None:
        for pc in list(self._peers):
            await pc.close()
        self._peers.clear()
        self._tracks.clear()


def _chosen_codec(sdp: str) -> str | None:
    """The codec an answer settles on: the first one of its video section."""
    for media in SessionDescription.parse(sdp).media:
        if media.kind == "video" and media.rtp.codecs:
            return media.rtp.codecs[0].mimeType
    return None
