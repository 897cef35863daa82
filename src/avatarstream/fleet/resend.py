"""The speech a lost replica had not spoken, sent again to the session's new replica.

One message cannot carry it: the replica's socket refuses a PCM message
longer than ``MAX_MESSAGE_S`` (an error event: the speech is lost) and closes
on one over its byte limit (its session closes). And its queue takes at most
``max_queued_audio_s``: past that the replica stops reading until it has
spoken enough. So the speech goes in pieces, each waiting for room, beside the
running session rather than before it starts.
"""

from __future__ import annotations

from avatarstream.fleet.replica_link import ReplicaLink
from avatarstream.fleet.speech import SpeechLog
from avatarstream.serve.audio_input import RATE

PIECE_S = 1.0  # far under MAX_MESSAGE_S (and a replica's 8 MiB message limit: 1 s of f32 is 188 KiB)


async def resend(log: SpeechLog, position: int, link: ReplicaLink) -> int:
    """Send ``log`` from ``position`` on through ``link``; returns the samples sent. Takes as long as the replica needs to
    make room for the last piece (its socket's backpressure): up to the speech beyond its queue bound, in real time."""
    sent = 0
    for piece in log.pieces(position, round(PIECE_S * RATE)):
        await link.send(piece)
        sent += piece.size
    return sent
