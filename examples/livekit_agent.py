"""A LiveKit Agents voice agent with an avatarstream face (needs a LiveKit server: docs/agents.md).

    pip install 'avatarstream[livekit]'
    export LIVEKIT_URL=ws://127.0.0.1:7880 LIVEKIT_API_KEY=devkey LIVEKIT_API_SECRET=secret   # `livekit-server --dev`
    python examples/livekit_agent.py dev                        # the avatar runs in this agent's process
    AVATARSTREAM_DISPATCHER=http://gpu-box:8089 python examples/livekit_agent.py dev   # or on `avatarstream livekit-worker`

Join the room from LiveKit's Agents Playground or any LiveKit client: the avatar greets you. The greeting is speech
from espeak-ng (or a WAV file: AGENT_WAV=answer.wav), so no cloud key is needed; a real agent gives AgentSession an STT,
an LLM and a TTS, and the avatar speaks what the TTS says.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import wave
from collections.abc import AsyncIterator

import numpy as np
from livekit import rtc
from livekit.agents import Agent, AgentServer, AgentSession, JobContext, cli

from avatarstream.integrations.livekit import AvatarstreamAvatar
from avatarstream.sources.audio_file import open_audio_file
from avatarstream.sources.bundled import DEFAULT_SPEECH

GREETING = "Hello! I am an avatar made by avatarstream, running on your own machine."

server = AgentServer()


def greeting_pcm() -> tuple[bytes, int]:
    """The greeting as 16-bit mono PCM and its rate: a recording, espeak-ng's voice, or the bundled speech."""
    wav = os.environ.get("AGENT_WAV")
    if wav is None and shutil.which("espeak-ng"):
        spoken = subprocess.run(["espeak-ng", "--stdout", GREETING], check=True, capture_output=True).stdout
        with wave.open(io.BytesIO(spoken)) as clip:
            return clip.readframes(clip.getnframes()), clip.getframerate()
    with open_audio_file(wav or DEFAULT_SPEECH) as source:
        mono = np.concatenate([block.samples.mean(axis=0) for block in source])
        return (np.clip(mono, -1, 1) * 32767).astype("<i2").tobytes(), source.sample_rate


async def frames(pcm: bytes, rate: int) -> AsyncIterator[rtc.AudioFrame]:
    """The recording in 20 ms frames, as a TTS streams them."""
    step = rate // 50 * 2
    for offset in range(0, len(pcm), step):
        piece = pcm[offset : offset + step]
        yield rtc.AudioFrame(piece, rate, 1, len(piece) // 2)


@server.rtc_session()
async def entrypoint(ctx: JobContext) -> None:
    session = AgentSession()
    dispatcher = os.environ.get("AVATARSTREAM_DISPATCHER")
    avatar = AvatarstreamAvatar(dispatcher_url=dispatcher) if dispatcher else AvatarstreamAvatar(model=os.environ.get("AVATARSTREAM_MODEL", "demo"))
    await avatar.start(session, room=ctx.room)
    await session.start(agent=Agent(instructions="You are a friendly avatar."), room=ctx.room)
    pcm, rate = greeting_pcm()
    session.say(GREETING, audio=frames(pcm, rate))


if __name__ == "__main__":
    cli.run_app(server)
