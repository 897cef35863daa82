"""A Pipecat bot with an avatarstream face, on Pipecat's local WebRTC transport: no cloud service, no key.

    make agents && source .venv/bin/activate    # from the clone: the pipecat extra, pinned (docs/setup.md#extras)
    python examples/pipecat_bot.py                      # then open http://127.0.0.1:7860/
    python examples/pipecat_bot.py --say "Hello there"  # the bot's words, spoken by espeak-ng
    python examples/pipecat_bot.py --wav answer.wav     # or any recording
    python examples/pipecat_bot.py --server-url http://127.0.0.1:8000   # the avatar rendered by `avatarstream serve`

Open the page and press Connect: the avatar is idle, then says its answer when you connect and again at every
"Say it again"; "Interrupt" cuts it short. A real bot puts speech-to-text, an LLM and a TTS service before the avatar;
here the "TTS" is the WAV file or espeak-ng, pushed into the pipeline as a TTS service would push it.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from aiohttp import web
from offline_tts import pieces, speech
from pipecat.frames.frames import InterruptionFrame, TTSAudioRawFrame, TTSStartedFrame, TTSStoppedFrame
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.transports.base_transport import TransportParams
from pipecat.transports.smallwebrtc.connection import SmallWebRTCConnection
from pipecat.transports.smallwebrtc.transport import SmallWebRTCTransport
from pipecat.workers.runner import WorkerRunner

from avatarstream.integrations.pipecat import AvatarstreamVideoService

GREETING = "Hello! I am an avatar made by avatarstream, running on your own machine. Ask me anything."

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>avatarstream + Pipecat</title><link rel="icon" href="data:,">
<style>body{font-family:sans-serif;margin:2em}video{width:384px;height:384px;background:#222;display:block;margin:1em 0}</style></head>
<body><h1>avatarstream + Pipecat</h1>
<video id="avatar" autoplay playsinline></video>
<button id="connect">Connect</button> <button id="say" disabled>Say it again</button> <button id="stop" disabled>Interrupt</button>
<p id="status">not connected</p>
<script>
const video = document.getElementById("avatar"), status = document.getElementById("status");
async function post(path, body) {
  const answer = await fetch(path, {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body || {})});
  return answer.json();
}
document.getElementById("connect").onclick = async () => {
  const pc = new RTCPeerConnection();
  window.botPeer = pc;
  const stream = new MediaStream();
  pc.ontrack = (e) => { stream.addTrack(e.track); video.srcObject = stream; };
  pc.addTransceiver("audio", {direction: "recvonly"});
  pc.addTransceiver("video", {direction: "recvonly"});
  await pc.setLocalDescription(await pc.createOffer());
  await new Promise((done) => { if (pc.iceGatheringState === "complete") done(); else pc.onicegatheringstatechange = () => pc.iceGatheringState === "complete" && done(); });
  await pc.setRemoteDescription(await post("/api/offer", {sdp: pc.localDescription.sdp, type: pc.localDescription.type}));
  status.textContent = "connected";
  document.getElementById("say").disabled = document.getElementById("stop").disabled = false;
};
document.getElementById("say").onclick = () => post("/api/say");
document.getElementById("stop").onclick = () => post("/api/interrupt");
</script></body></html>
"""


class Bot:
    """One conversation at a time: the pipeline of the last browser that connected."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.answer, self.rate = speech(args.say, args.wav)
        self.worker: PipelineWorker | None = None
        self.runner: WorkerRunner | None = None
        self.connection: SmallWebRTCConnection | None = None

    def avatar(self) -> AvatarstreamVideoService:
        if self.args.server_url:
            return AvatarstreamVideoService(server_url=self.args.server_url, token=self.args.token)
        return AvatarstreamVideoService(model=self.args.model, device=self.args.device)

    async def connect(self, offer: dict[str, str]) -> dict[str, str]:
        await self.hang_up()
        self.connection = connection = SmallWebRTCConnection()
        await connection.initialize(sdp=offer["sdp"], type=offer["type"])
        avatar = self.avatar()
        # a model in this process knows its frames now; a server's session says them once open: give them (--size, --fps)
        width, height = (self.args.size, self.args.size) if self.args.server_url else avatar.frame_size
        params = TransportParams(
            audio_out_enabled=True,
            video_out_enabled=True,
            video_out_is_live=False,  # the avatar's images travel with their audio
            video_out_width=width,
            video_out_height=height,
            video_out_framerate=self.args.fps if self.args.server_url else avatar.fps,
        )
        transport = SmallWebRTCTransport(connection, params)
        self.worker = PipelineWorker(
            Pipeline([transport.input(), avatar, transport.output()]),
            params=PipelineParams(enable_metrics=True, audio_out_sample_rate=48000),
            enable_rtvi=False,
        )

        @transport.event_handler("on_client_connected")
        async def greet(transport: SmallWebRTCTransport, client: object) -> None:
            await self.say()

        self.runner = WorkerRunner(handle_sigint=False)
        await self.runner.add_workers(self.worker)
        asyncio.create_task(self.runner.run())
        answer = connection.get_answer()
        return {"sdp": answer["sdp"], "type": answer["type"]}

    async def say(self) -> None:
        if self.worker is None:
            return
        audio = [TTSAudioRawFrame(piece, self.rate, 1) for piece in pieces(self.answer, self.rate)]
        await self.worker.queue_frames([TTSStartedFrame(), *audio, TTSStoppedFrame()])

    async def interrupt(self) -> None:
        if self.worker is not None:
            await self.worker.queue_frame(InterruptionFrame())

    async def hang_up(self) -> None:
        if self.runner is not None:
            await self.runner.cancel()
        if self.connection is not None:
            await self.connection.disconnect()  # the peer connection's own tasks end with it
        self.worker = self.runner = self.connection = None


def main() -> None:
    parser = argparse.ArgumentParser(description="A Pipecat bot with an avatarstream face, on a page at 127.0.0.1 (no cloud key).")
    parser.add_argument("--model", default="demo", help="avatarstream model in this process (`avatarstream families` lists them)")
    parser.add_argument("--device", default="auto", help="cpu, cuda or auto")
    parser.add_argument("--server-url", help="render on a running `avatarstream serve` instead")
    parser.add_argument("--token", help="that server's token")
    parser.add_argument("--size", type=int, default=512, help="with --server-url: the server model's frame size (square)")
    parser.add_argument("--fps", type=int, default=25, help="with --server-url: the server model's frame rate")
    parser.add_argument("--say", default=GREETING, help="what the bot says, spoken by espeak-ng")
    parser.add_argument("--wav", type=Path, help="what the bot says, as a recording (WAV, FLAC, MP3, OGG)")
    parser.add_argument("--port", type=int, default=7860, help="port of the page, on 127.0.0.1")
    args = parser.parse_args()
    bot = Bot(args)

    async def page(request: web.Request) -> web.Response:
        return web.Response(text=PAGE, content_type="text/html")

    async def offer(request: web.Request) -> web.Response:
        return web.json_response(await bot.connect(await request.json()))

    async def say(request: web.Request) -> web.Response:
        await bot.say()
        return web.json_response({"ok": True})

    async def interrupt(request: web.Request) -> web.Response:
        await bot.interrupt()
        return web.json_response({"ok": True})

    async def stop(app: web.Application) -> None:
        await bot.hang_up()

    app = web.Application()
    app.add_routes([web.get("/", page), web.post("/api/offer", offer), web.post("/api/say", say), web.post("/api/interrupt", interrupt)])
    app.on_cleanup.append(stop)
    print(f"pipecat_bot: open http://127.0.0.1:{args.port}/ and press Connect", flush=True)
    web.run_app(app, host="127.0.0.1", port=args.port, print=None)


if __name__ == "__main__":
    main()
