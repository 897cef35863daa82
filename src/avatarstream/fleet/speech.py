"""The ingress's copy of a session's speech not yet done: what a resumed session hears again, so none is lost or repeated.

The ingress decodes every client's audio itself (any PCM format or encoded
clip -> mono float32 at the session rate) before it goes to the replica, so a
position counted in those samples means the same on both sides. The replica
reports how much speech it is done with (spoken, or dropped by an interrupt)
with each saved state; the log keeps only what comes after: the replica's
queue (at most ``max_queued_audio_s``) and what is on its way there.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator

import numpy as np


class SpeechLog:
    """Speech samples forwarded to the replica, from absolute position ``start`` to ``end``."""

    def __init__(self) -> None:
        self.start = 0
        self._pieces: deque[np.ndarray] = deque()
        self._held = 0

    @property
    def end(self) -> int:
        return self.start + self._held

    def add(self, samples: np.ndarray) -> None:
        if samples.size:
            self._pieces.append(samples)
            self._held += samples.size

    def done_until(self, position: int) -> None:
        """The replica is done with everything before ``position``: forget it."""
        drop = min(max(position - self.start, 0), self._held)
        while drop:
            first = self._pieces[0]
            if first.size <= drop:
                self._pieces.popleft()
                cut = first.size
            else:
                self._pieces[0] = first[drop:]
                cut = drop
            drop -= cut
            self._held -= cut
            self.start += cut

    def drop_all(self) -> None:
        """An interrupt: everything forwarded so far is done with (dropped by the replica, or spoken)."""
        self.done_until(self.end)

    def pieces(self, position: int, n: int) -> Iterator[np.ndarray]:
        """What to send again from ``position`` on (from the log's start, if that is later), at most ``n`` samples a piece.
        Read as it goes: what the log forgets meanwhile (an interrupt) is not sent."""
        while True:
            position = max(position, self.start)
            piece = self._read(position, n)
            if piece is None:
                return
            position += piece.size
            yield piece

    def _read(self, position: int, n: int) -> np.ndarray | None:
        """Up to ``n`` samples from ``position`` on (None: the log holds nothing there)."""
        skip, taken, out = position - self.start, 0, []
        for piece in self._pieces:
            if skip >= piece.size:
                skip -= piece.size
                continue
            out.append(piece[skip : skip + n - taken])
            taken += out[-1].size
            skip = 0
            if taken == n:
                break
        return np.concatenate(out) if out else None
