"""Keeping the ranks of one session in step, and stopping all of them when one fails.

Rank 0 opens every chunk for the others (``LeadGate``); they wait for it
host-side (``FollowGate``), so no rank enters a chunk's collectives before
rank 0 has decided to generate it, and a run rank 0 stops early ends on
every rank at the same chunk.

``stops_every_rank`` wraps each rank's part of a run: the first failure
anywhere is written to the store with the failing rank's words. A rank
blocked in a collective with a failed rank wakes with an error only when
that rank's process exits (gloo and NCCL keep the connections of groups that
are still referenced), so a follower that stops raises ``RankFailed``, which
the CLI turns into a quiet exit with status 0: the launcher then leaves rank 0
to finish (it stops every worker once one fails), rank 0 wakes, finalizes its
outputs and reports the failure, and its status is the command's.
"""

from __future__ import annotations

import contextlib
import traceback
from collections.abc import Iterator
from pathlib import Path

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
            self.control.put(_chunk_key(self.run, self._next), pack({"word": word}))
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
    """The failure in one line: our errors as they are, anything else with where it was raised (the only trace rank 0 gets)."""
    if isinstance(err, AvatarStreamError):
        return str(err)
    if isinstance(err, KeyboardInterrupt):
        return "interrupted"
    frames = traceback.extract_tb(err.__traceback__)
    where = f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno} in {frames[-1].name})" if frames else ""
    return f"{type(err).__name__}: {err}{where}"


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
            control.fail(_describe(err))  # kept only if no other rank's failure came first
        if dist.is_initialized():
            dist.destroy_process_group()  # no collective starts after a failure
        first = None
        with contextlib.suppress(Exception):
            first = control.failure()
        if groups.role != "lead":  # the process exits (status 0): ranks blocked in a collective with it wake
            raise RankFailed(f"the session stopped: {first or _describe(err)}") from err
        if isinstance(err, RankFailed) or first is None or first.startswith(mine):
            raise
        raise RankFailed(f"the session stopped: {first}") from err
