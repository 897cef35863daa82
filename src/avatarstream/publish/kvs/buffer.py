"""Fragments between hand-over and acknowledgement, bounded so memory stays constant.

A fragment stays here until the service acknowledges it, so that after an
ERROR acknowledgement or a dropped connection the next connection can resend
from the first unacknowledged fragment: nothing lost, nothing sent twice once
acknowledged. When the network is down for longer than the buffer holds, the
oldest fragment not on the wire is given up (a gap in a live stream is better
than unbounded memory or a stalled producer).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from avatarstream.publish.kvs.fragmenter import Fragment


@dataclass
class _Entry:
    fragment: Fragment
    sent: bool = False  # written to the current connection
    failures: int = 0  # ERROR acknowledgements received for it


class FragmentBuffer:
    """Owned by one thread (the upload loop); ``capacity`` fragments at most."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._entries: deque[_Entry] = deque()

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def has_unsent(self) -> bool:
        return any(not e.sent for e in self._entries)

    @property
    def in_flight(self) -> int:
        """Fragments written to the current connection and not yet acknowledged."""
        return sum(e.sent for e in self._entries)

    def add(self, fragment: Fragment) -> Fragment | None:
        """Keep ``fragment``; when full, return the one given up: the oldest not on the wire, else this one."""
        if len(self._entries) < self._capacity:
            self._entries.append(_Entry(fragment))
            return None
        for entry in self._entries:
            if not entry.sent:
                self._entries.remove(entry)
                self._entries.append(_Entry(fragment))
                return entry.fragment
        return fragment

    def take_unsent(self) -> Fragment | None:
        """The next fragment to write to the current connection, now marked as written."""
        for entry in self._entries:
            if not entry.sent:
                entry.sent = True
                return entry.fragment
        return None

    def rewind(self) -> None:
        """A new connection starts: everything unacknowledged is to be sent again, in order."""
        for entry in self._entries:
            entry.sent = False

    def acknowledge(self, timecode: int) -> Fragment | None:
        """Forget the fragment the service has taken; None if it is not (or no longer) here."""
        entry = self._find(timecode)
        if entry is None:
            return None
        self._entries.remove(entry)
        return entry.fragment

    def fail(self, timecode: int | None, max_attempts: int) -> tuple[Fragment, bool] | None:
        """Count an ERROR for the fragment (the oldest if the timecode is unknown, as the producer SDK does).

        Returns the fragment and whether it was given up after ``max_attempts`` ERRORs.
        """
        entry = self._find(timecode) if timecode is not None else None
        if entry is None and self._entries:
            entry = self._entries[0]
        if entry is None:
            return None
        entry.failures += 1
        if entry.failures < max_attempts:
            return entry.fragment, False
        self._entries.remove(entry)
        return entry.fragment, True

    def clear(self) -> list[Fragment]:
        """Give up everything (the stream can no longer be written)."""
        fragments = [e.fragment for e in self._entries]
        self._entries.clear()
        return fragments

    def _find(self, timecode: int) -> _Entry | None:
        return next((e for e in self._entries if e.fragment.timecode_ms == timecode), None)
