"""Keeping the ranks of one session in step, and stopping all of them when one fails.

Rank 0 opens every chunk for the others (``LeadGate``); they wait for it
host-side (``FollowGate``), so no rank enters a chunk's collectives before
rank 0 has decided to generate it, and a run rank 0 stops early ends on
every rank at the same chunk. ``stops_every_rank`` wraps each rank's part of
a run: a failure anywhere is written to the store, the process group is torn
down (which wakes every rank blocked in a collective with an error), and each
rank raises the first failure's message; a follower then waits for rank 0 to
finalize its outputs before it exits, so the launcher never stops rank 0
mid-write.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
import torch.distributed as dist

from avatarstream.errors import AvatarStreamError
from avatarstream.runtime.parallel.control import ControlChannel, RankFailed, pack, unpack
from avatarstream.runtime.parallel.groups import ParallelGroups
from avatarstream.sources.pcm import PcmBlock

GO, STOP = "go", "stop"


def _chunk_key(run: int, index: int) -> str:
    return f"run/{run}/chunk/{index}"


class LeadGate:
    """Rank 0's side of one run."""

    def __init__(self, control: ControlChannel, run: int) -> None:
        self.control, self.run = control, run
        self._next = 0
        self._ended = False

    @classmethod
    def announce(cls, groups: ParallelGroups, reference_image: np.ndarray, prompt: str, seed: int) -> LeadGate:
        if not dist.is_initialized():
            raise RankFailed(f"the parallel group stopped after an earlier failure ({_failure(groups)}); start the command again")
        assert groups.control is not None, "a distributed run has a control channel"
        return cls(groups.control, groups.control.announce(reference_image, prompt, seed))

    def relay(self, audio: Iterator[PcmBlock]) -> Iterator[PcmBlock]:
        return self.control.relay(self.run, audio)

    def chunk_starts(self) -> bool:
        self._post(GO)
        return True

    def end(self) -> None:
        """The run is over here (done or stopped): the others end at the same chunk."""
        if not self._ended:
            self._ended = True
            self._post(STOP)

    def _post(self, word: str) -> None:
        if self.control.audio_readers:
            self.control.store.set(_chunk_key(self.run, self._next), pack({"word": word}))
        self._next += 1


class FollowGate:
    """A generating follower's side of one run."""

    def __init__(self, control: ControlChannel, run: int) -> None:
        self.control, self.run = control, run
        self._next = 0
        self._ended = False

    def chunk_starts(self) -> bool:
        header, _ = unpack(self.control.take(_chunk_key(self.run, self._next), readers=self.control.audio_readers))
        self._next += 1
        self._ended = header["word"] == STOP
        return not self._ended

    def end(self) -> None:
        """Read rank 0's stop when this rank's chunk loop ended by itself (end of audio), so nothing is left in the store."""
        if not self._ended:
            self.chunk_starts()


class DecodeGate:
    """The decode rank's run: it follows the stretches rank 0 sends, not chunks."""

    def __init__(self, run: int) -> None:
        self.run = run

    def chunk_starts(self) -> bool:
        raise AssertionError("the decode rank runs no chunks")

    def end(self) -> None:
        """Nothing to release: the stretches' end marker closed the run."""


def follower_gate(groups: ParallelGroups, run: int) -> FollowGate | DecodeGate:
    assert groups.control is not None, "a distributed run has a control channel"
    return DecodeGate(run) if groups.role == "decode" else FollowGate(groups.control, run)


def _failure(groups: ParallelGroups) -> str:
    found = groups.control.failure() if groups.control is not None else None
    return found or "no message"


def _describe(err: BaseException) -> str:
    if isinstance(err, AvatarStreamError):
        return str(err)
    if isinstance(err, KeyboardInterrupt):
        return "interrupted"
    return f"{type(err).__name__}: {err}"


@contextlib.contextmanager
def stops_every_rank(groups: ParallelGroups) -> Iterator[None]:
    """Run a rank's part of the session; a failure anywhere stops every rank with the first failure's message."""
    try:
        yield
    except GeneratorExit:  # rank 0's consumer closed the stream: a stop, not a failure
        raise
    except BaseException as err:
        control = groups.control
        if control is None:
            raise
        mine = f"rank {groups.rank}: "
        with contextlib.suppress(Exception):  # the store itself may be gone with the launcher
            if control.failure() is None:
                control.fail(_describe(err))
        if dist.is_initialized():
            dist.destroy_process_group()  # every rank still inside a collective with us gets an error now
        first = control.failure()
        if groups.role != "lead":
            control.wait_finished(0)  # rank 0 finalizes its outputs before anyone exits
        if isinstance(err, RankFailed) or first is None or first.startswith(mine):
            raise
        raise RankFailed(f"the session stopped: {first}") from err
