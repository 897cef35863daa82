"""The page's Microphone button in headless Chromium with a fake microphone (a WAV file Chromium loops): its speech
reaches the session over the audio WebSocket (with the token in the query on a server that has one), and the page's
End button keeps the last words in the recording it offers.

What the page says it sent is checked against what the server says it spoke: the frames WebSocket gives every frame's
share of queued speech, so the speech seconds the server rendered are counted frame by frame, independently of the
page and of the file's length."""

from __future__ import annotations

import contextlib
import json
import struct
import sys
import threading
from pathlib import Path

import httpx
import numpy as np
import pytest
from serve_harness import TOKEN, running_server, speech, wav_bytes
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from mp4_checks import decode

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "publish"))  # the publish tests' browser launcher
from publish_browser import chromium_page

MIC_S = 3.0  # how long the microphone stays on, by the page's own count


class SpokenFrames:
    """Reads a session's frames WebSocket in a thread until the session ends: each frame's number and speech share."""

    def __init__(self, base: str, sid: str, token: str | None) -> None:
        query = f"?token={token}" if token else ""
        self.url = base.replace("http://", "ws://") + f"/sessions/{sid}/frames{query}"
        self.stream: dict = {}
        self.frames: list[tuple[int, float]] = []
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        assert self.ready.wait(10), "the frames socket did not open"

    def _read(self) -> None:
        with connect(self.url, max_size=None) as socket:
            self.stream = json.loads(socket.recv())
            self.ready.set()
            with contextlib.suppress(ConnectionClosed):
                while True:
                    data = socket.recv()
                    (size,) = struct.unpack_from("<I", data)
                    header = json.loads(data[4 : 4 + size])
                    self.frames.append((header["frame"], header["speech"]))

    def wait_closed(self) -> None:
        self.thread.join(30)
        assert not self.thread.is_alive(), "the frames socket stayed open after the session ended"


@pytest.mark.parametrize("token", [None, TOKEN], ids=["open", "token"])
def test_microphone_speech_reaches_the_session_and_the_recording(tmp_path: Path, token: str | None) -> None:
    voice = tmp_path / "voice.wav"
    voice.write_bytes(wav_bytes(speech(2.0)))
    fake_mic = ["--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream", f"--use-file-for-fake-audio-capture={voice}"]
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with running_server(tmp_path, token=token) as base, chromium_page(tmp_path / "profile", fake_mic) as page:
        sockets: list[str] = []
        page.on("websocket", lambda ws: sockets.append(ws.url))
        page.goto(base + "/")
        if token:
            page.wait_for_selector("#token", state="visible")
            page.fill("#token", token)
        page.check("#record")
        page.click("#start")
        page.wait_for_function("window.avatarPage.sessionId !== null", timeout=20000)
        sid = page.evaluate("window.avatarPage.sessionId")
        spoken = SpokenFrames(base, sid, token)

        page.click("#mic")
        page.wait_for_function(f"window.avatarPage.micSentS >= {MIC_S} && window.avatarPage.info.stats.speaking", timeout=20000)
        assert page.inner_text("#mic") == "Microphone on" and page.inner_text("#speaking") == "yes"
        page.screenshot(path=str(tmp_path / "microphone-on.png"), full_page=True)
        page.click("#mic")
        sent_s = page.evaluate("window.avatarPage.micSentS")
        assert page.inner_text("#mic") == "Microphone"

        page.click("#end")
        page.wait_for_function("window.avatarPage.video !== null || window.avatarPage.error !== null", timeout=30000)
        shown = page.evaluate("({error: window.avatarPage.error, state: document.getElementById('state').textContent})")
        offered = page.evaluate("fetch(window.avatarPage.video).then((r) => r.arrayBuffer()).then((b) => b.byteLength)")
        spoken.wait_closed()
        video = httpx.get(f"{base}/sessions/{sid}/video.mp4", headers=headers)
    assert shown == {"error": None, "state": "session done"}
    assert [url.split("?")[0] for url in sockets] == [base.replace("http://", "ws://") + f"/sessions/{sid}/audio"]
    assert ("token=" + token in sockets[0]) if token else ("token=" not in sockets[0])
    assert video.status_code == 200 and len(video.content) == offered  # the page offers the session's MP4

    fps = spoken.stream["fps"]
    numbers = [number for number, _ in spoken.frames]
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))  # every frame, none lost
    spoken_s = sum(share for _, share in spoken.frames) / fps
    last_speech = max(number for number, share in spoken.frames if share > 0)
    print(f"\nmicrophone: the page sent {sent_s:.3f} s, the session spoke {spoken_s:.3f} s, the last of it in frame {last_speech}")
    assert abs(spoken_s - sent_s) <= 2 / fps  # all that was sent was spoken, the last words too

    (tmp_path / "session.mp4").write_bytes(video.content)
    recording = decode(tmp_path / "session.mp4")
    assert len(recording.frames) == numbers[-1] + 1  # the recording holds every frame the session made, the spoken ones too
    last_full = max(number for number, share in spoken.frames if share == 1)  # the last frame that is all speech
    step = recording.audio_rate // fps
    last_words = recording.audio[:, (last_full - 1) * step : (last_full + 1) * step]
    assert np.sqrt((last_words**2).mean()) > 1e-3  # and they sound
