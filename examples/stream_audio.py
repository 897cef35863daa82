"""Talk to a live session: stream a WAV file into `avatarstream serve` as a microphone would, then save the video.

    avatarstream serve --model demo                              # in another terminal
    python examples/stream_audio.py speech.wav --out avatar.mp4  # real time: the avatar speaks as it is sent
    python examples/stream_audio.py speech.wav --fast --server http://gpu-box:8000 --token "$TOKEN"

It opens a session that records its video (outputs.file), sends the WAV's PCM over the session's audio WebSocket
(docs/api.md) in pieces of 100 ms, ends the session with the socket's `{"type": "end"}` (the avatar first says what is
still queued, so the video keeps the last words; sent on the same socket, the end comes after the last piece, where a
POST /sessions/{id}/end could overtake speech still on its way), waits for it to close and downloads its MP4. While
it runs the session can be watched live in a browser at the printed address. The WAV may have any rate and channel
count; only PCM (integer) WAV files are read. Needs the standard library and `websockets` (an avatarstream dependency)
only, so it runs on any machine that reaches the server.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import wave
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus, WebSocketException

PIECE_S = 0.1  # what one WebSocket message carries: a microphone sends 20 ms to 1 s at a time
POLL_S = 0.5
FLIP_SIGN = bytes(i ^ 0x80 for i in range(256))  # 8-bit WAV is unsigned: flipping the top bit makes it signed


class Failure(Exception):
    """A one-line reason to stop, printed without a traceback."""


@dataclass(frozen=True)
class Pcm:
    """Interleaved 16-bit little-endian PCM, one or two channels, as the audio socket takes it (format=s16le)."""

    data: bytes
    rate: int
    channels: int

    @property
    def seconds(self) -> float:
        return len(self.data) / (2 * self.channels * self.rate)


def read_wav(path: Path) -> Pcm:
    """The WAV's samples as s16le; more than two channels are mixed down to one (the socket takes 1 or 2)."""
    try:
        with wave.open(str(path), "rb") as wav:
            width, rate, channels = wav.getsampwidth(), wav.getframerate(), wav.getnchannels()
            frames = wav.readframes(wav.getnframes())
    except FileNotFoundError:
        raise Failure(f"no such file: {path}") from None
    except (wave.Error, EOFError) as err:
        raise Failure(f"{path} is not a PCM WAV file ({err or 'cut short'}); convert it: ffmpeg -i IN -c:a pcm_s16le OUT.wav") from None
    if not frames:
        raise Failure(f"{path} holds no audio")
    data = to_s16(frames, width)
    if channels > 2:
        data, channels = mix_down(data, channels), 1
    return Pcm(data, rate, channels)


def to_s16(frames: bytes, width: int) -> bytes:
    """8, 24 or 32-bit samples as 16-bit: the top two bytes of each (a WAV's samples are little-endian)."""
    if width == 2:
        return frames
    out = bytearray(len(frames) // width * 2)
    if width == 1:
        out[1::2] = frames.translate(FLIP_SIGN)
    else:
        out[0::2], out[1::2] = frames[width - 2 :: width], frames[width - 1 :: width]
    return bytes(out)


def mix_down(data: bytes, channels: int) -> bytes:
    samples = array("h", data)
    if sys.byteorder == "big":
        samples.byteswap()
    mono = array("h", (sum(samples[i : i + channels]) // channels for i in range(0, len(samples), channels)))
    if sys.byteorder == "big":
        mono.byteswap()
    return mono.tobytes()


class Server:
    """The session server's HTTP API, with its token; every refusal becomes a Failure that quotes the server's reason."""

    def __init__(self, base: str, token: str | None) -> None:
        self.base = base.rstrip("/")
        self.token = token

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def call(self, method: str, path: str, form: dict[str, str] | None = None) -> dict[str, Any]:
        body = urllib.parse.urlencode(form).encode() if form is not None else None
        request = urllib.request.Request(self.base + path, body, self.headers(), method=method)
        with self.open(request) as response:
            return json.load(response)

    def download(self, path: str, out: Path) -> int:
        with self.open(urllib.request.Request(self.base + path, headers=self.headers())) as response:
            data = response.read()
        out.write_bytes(data)
        return len(data)

    def open(self, request: urllib.request.Request) -> Any:
        try:
            return urllib.request.urlopen(request, timeout=60)
        except urllib.error.HTTPError as err:
            raise Failure(refusal(err.code, err.read())) from None
        except urllib.error.URLError as err:
            raise Failure(f"cannot reach {self.base}: {getattr(err.reason, 'strerror', None) or err.reason} (is `avatarstream serve` running?)") from None

    def socket_url(self, path: str, pcm: Pcm) -> str:
        query = urllib.parse.urlencode({"format": "s16le", "rate": pcm.rate, "channels": pcm.channels})
        return self.base.replace("http", "ws", 1) + f"{path}?{query}"


def refusal(status: int, body: bytes) -> str:
    """The server's JSON problem (docs/api.md) as one line; for 401, what to do about the token."""
    try:
        detail = json.loads(body)["detail"]
    except (ValueError, KeyError, TypeError):
        detail = body.decode(errors="replace").strip()[:200]
    if status == 401:
        return f"the server refused the token ({detail}): pass --token or set AVATARSTREAM_TOKEN"
    return f"the server answered {status}: {detail}"


async def stream(server: Server, pcm: Pcm, model_options: str, realtime: bool, out: Path) -> None:
    """Open a session, speak the PCM into it, end it and save its video."""
    form = {"identity": "default", "outputs": json.dumps({"file": True}), "model_options": model_options}
    info = await asyncio.to_thread(server.call, "POST", "/sessions", form)
    print(f"session open; watch it live at {server.base}{info['links']['preview']}")
    try:
        await speak(server, info, pcm, realtime)
    except BaseException:  # a refusal, a lost socket, Ctrl-C: free the session's slot now rather than at the idle timeout
        with contextlib.suppress(Failure):
            server.call("DELETE", info["links"]["self"])
        raise
    size = await asyncio.to_thread(server.download, info["links"]["video"], out)
    print(f"saved {out} ({size / 1e6:.1f} MB)")


async def speak(server: Server, info: dict[str, Any], pcm: Pcm, realtime: bool) -> None:
    try:
        async with connect(server.socket_url(info["links"]["audio_ws"], pcm), additional_headers=server.headers()) as ws:
            reader = asyncio.create_task(report_errors(ws))
            await send(ws, pcm, realtime)
            await ws.send(json.dumps({"type": "end"}))  # after the last piece, in order: the session takes it all, then ends
            await wait_closed(server, info["id"], pcm.seconds)
            reader.cancel()
    except InvalidStatus as err:
        raise Failure("audio socket: " + refusal(err.response.status_code, bytes(err.response.body or b""))) from None
    except (OSError, WebSocketException) as err:
        raise Failure(f"audio socket: {err}") from None


async def send(ws: ClientConnection, pcm: Pcm, realtime: bool) -> None:
    """In pieces of PIECE_S; at real time, or as fast as the server reads them (it stops reading while its queue is full)."""
    step = round(pcm.rate * PIECE_S) * 2 * pcm.channels
    start = shown = time.monotonic()
    for i, offset in enumerate(range(0, len(pcm.data), step)):
        await ws.send(pcm.data[offset : offset + step])
        if realtime:
            await asyncio.sleep(max(0.0, start + (i + 1) * PIECE_S - time.monotonic()))
        if time.monotonic() - shown >= 1.0:
            shown = time.monotonic()
            print(f"sent {min(pcm.seconds, (i + 1) * PIECE_S):.1f} of {pcm.seconds:.1f} s")
    print(f"sent all {pcm.seconds:.1f} s in {time.monotonic() - start:.1f} s")


async def report_errors(ws: ClientConnection) -> None:
    """Print what the server refused (bad PCM, a failed session); the frames events are not needed here."""
    with contextlib.suppress(ConnectionClosed):  # the server closes the socket when the session ends
        async for message in ws:
            event = json.loads(message)
            if event["type"] == "error":
                print(f"server: {event['message']}", file=sys.stderr)


async def wait_closed(server: Server, sid: str, sent_s: float) -> None:
    """Wait until the ended session has said its queued speech, closed and finalized its MP4."""
    deadline = time.monotonic() + 3 * sent_s + 60  # a live session speaks in real time; this allows for a slow GPU
    print("ending: the avatar says what is still queued, then the session closes")
    while True:
        info = await asyncio.to_thread(server.call, "GET", f"/sessions/{sid}")
        if info["state"] == "failed":
            raise Failure(f"the session failed: {info['error']}")
        if info["state"] not in ("running", "ending"):
            print(f"session {info['state']}: {info['stats']['frames']} frames, {info['stats']['duration_s']:.1f} s of video")
            return
        if time.monotonic() > deadline:
            raise Failure(f"the session did not close within {3 * sent_s + 60:.0f} s of ending")
        await asyncio.sleep(POLL_S)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("wav", type=Path, help="a PCM WAV file, any rate and channels")
    parser.add_argument("--server", default="http://127.0.0.1:8000", help="the server's address (default %(default)s)")
    parser.add_argument("--token", default=os.environ.get("AVATARSTREAM_TOKEN"), help="the server's token (default $AVATARSTREAM_TOKEN)")
    parser.add_argument("--model-options", default="{}", help="the session's model options as JSON, e.g. '{\"avatar\": 7}'")
    parser.add_argument("--out", type=Path, default=Path("avatar.mp4"), help="where to save the video (default %(default)s)")
    pace = parser.add_mutually_exclusive_group()
    pace.add_argument("--realtime", dest="realtime", action="store_true", default=True, help="send at real time, as a microphone does (default)")
    pace.add_argument("--fast", dest="realtime", action="store_false", help="send as fast as the server takes it (it queues the speech)")
    args = parser.parse_args(argv)
    try:
        pcm = read_wav(args.wav)
        print(f"{args.wav}: {pcm.seconds:.1f} s at {pcm.rate} Hz, {pcm.channels} channel(s)")
        asyncio.run(stream(Server(args.server, args.token), pcm, args.model_options, args.realtime, args.out))
    except Failure as err:
        print(f"stream_audio: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
