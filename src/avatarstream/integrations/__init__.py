"""avatarstream as the face of a voice agent: a Pipecat video service and a LiveKit Agents avatar (docs/agents.md).

Both sit on one engine (``engine.AvatarEngine``): speech in, frames out with the audio that plays with them, idle frames
while nobody speaks. ``LocalEngine`` runs a model in this process; ``RemoteEngine`` drives a session of ``avatarstream serve``.
The framework adapters are ``avatarstream.integrations.pipecat`` (extra ``[pipecat]``) and
``avatarstream.integrations.livekit`` (extra ``[livekit]``); nothing here imports either framework.
"""
