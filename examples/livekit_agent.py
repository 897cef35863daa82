"""A LiveKit Agents voice agent with an avatarstream face (needs a LiveKit server: docs/agents.md).

    make agents && source .venv/bin/activate    # from the clone: the livekit extra, pinned (docs/setup.md#extras)
    export LIVEKIT_URL=ws://127.0.0.1:7880 LIVEKIT_API_KEY=devkey LIVEKIT_API_SECRET=secret   # `livekit-server --dev`
    python examples/livekit_agent.py                            # the avatar runs in this agent's process
    AVATARSTREAM_DISPATCHER=http://gpu-box:8089 python examples/livekit_agent.py   # or on `avatarstream livekit-worker`

Running the file is `python -m livekit.agents start examples/livekit_agent.py --dev` (livekit-agents' own runner; its
older `cli.run_app` and `dev` command are deprecated). It checks first that the LiveKit server answers, and stops
with one line if not, instead of retrying in the log forever.

Join the room from LiveKit's Agents Playground or any LiveKit client: the avatar greets you. The greeting is speech
from espeak-ng (or a WAV file: AGENT_WAV=answer.wav), so no cloud key is needed; a real agent gives AgentSession an STT,
an LLM and a TTS, and the avatar speaks what the TTS says.
"""

from __future__ import annotations

import os
import socket
import sys
import urllib.parse
from collections.abc import AsyncIterator

from livekit import rtc
from livekit.agents import Agent, AgentServer, AgentSession, JobContext
from livekit.agents.__main__ import main as run_agents
from offline_tts import pieces, speech

from avatarstream.integrations.livekit import AvatarstreamAvatar

GREETING = "Hello! I am an avatar made by avatarstream, running on your own machine."

server = AgentServer()


async def frames(pcm: bytes, rate: int) -> AsyncIterator[rtc.AudioFrame]:
    for piece in pieces(pcm, rate):
        yield rtc.AudioFrame(piece, rate, 1, len(piece) // 2)


@server.rtc_session()
async def entrypoint(ctx: JobContext) -> None:
    session = AgentSession()
    dispatcher = os.environ.get("AVATARSTREAM_DISPATCHER")
    avatar = AvatarstreamAvatar(dispatcher_url=dispatcher) if dispatcher else AvatarstreamAvatar(model=os.environ.get("AVATARSTREAM_MODEL", "demo"))
    await avatar.start(session, room=ctx.room)
    await session.start(agent=Agent(instructions="You are a friendly avatar."), room=ctx.room)
    pcm, rate = speech(GREETING, os.environ.get("AGENT_WAV"))
    session.say(GREETING, audio=frames(pcm, rate))


def livekit_server_error() -> str | None:
    """Why the LiveKit server of LIVEKIT_URL cannot be reached, or None when it answers."""
    url = os.environ.get("LIVEKIT_URL")
    if not url:
        return (
            "LIVEKIT_URL is not set: export LIVEKIT_URL, LIVEKIT_API_KEY and LIVEKIT_API_SECRET (`livekit-server --dev`: ws://127.0.0.1:7880, devkey, secret)"
        )
    parts = urllib.parse.urlsplit(url)
    port = parts.port or (443 if parts.scheme in ("wss", "https") else 80)
    try:
        socket.create_connection((parts.hostname or "", port), timeout=3).close()
    except OSError as err:
        return f"no LiveKit server answers at {url} ({err.strerror or err}); start one (`livekit-server --dev`) or fix LIVEKIT_URL"
    return None


if __name__ == "__main__":
    if (problem := livekit_server_error()) is not None:
        sys.exit(f"error: {problem}")
    sys.exit(run_agents(["start", __file__, "--dev", *sys.argv[1:]]))
