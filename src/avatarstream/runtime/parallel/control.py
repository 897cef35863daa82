"""Host-side messages between the ranks of one session, through the launcher's TCP store.

The lead rank (0) announces each run (reference image, prompt, seed), relays
every block of audio it reads, and the other ranks follow. Waiting here is a
poll of the store, never a collective: a live session may wait for speech for
an hour and no collective timeout (gloo's, NCCL's watchdog) fires. The first
rank that fails writes ``error``; every wait checks it, so one failure stops
every rank with the failing rank's message. Keys are deleted once every rank
that needs them has read them: the store holds a few blocks, not a session.

Payloads are a JSON header and raw array bytes (no pickle).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta

import numpy as np
import torch.distributed as dist

from avatarstream.errors import AvatarStreamError
from avatarstream.sources.pcm import PcmBlock

POLL_FIRST_S, POLL_LONGEST_S = 0.001, 0.02
PREFIX = "avatarstream/"
SEPARATOR = b"\n"


class RankFailed(AvatarStreamError):
    """Another rank of the session failed; its message says why."""


@dataclass(frozen=True)
class RunCommand:
    run: int
    reference_image: np.ndarray
    prompt: str
    seed: int


def pack(header: dict[str, object], array: np.ndarray | None = None) -> bytes:
    if array is not None:
        header = {**header, "dtype": str(array.dtype), "shape": list(array.shape)}
    body = b"" if array is None else np.ascontiguousarray(array).tobytes()
    return json.dumps(header).encode() + SEPARATOR + body


def unpack(data: bytes) -> tuple[dict[str, object], np.ndarray | None]:
    head, _, body = data.partition(SEPARATOR)
    header = json.loads(head)
    if "dtype" not in header:
        return header, None
    shape = [int(n) for n in header["shape"]]
    return header, np.frombuffer(body, dtype=np.dtype(str(header["dtype"]))).reshape(shape).copy()


class ControlChannel:
    """Run commands and audio from the lead to the followers; errors from anyone to everyone."""

    def __init__(self, store: dist.Store, rank: int, world: int, audio_readers: int) -> None:
        self.store = store
        self.rank = rank
        self.world = world
        self.audio_readers = audio_readers  # followers that generate (a decode rank needs no audio)
        self._next_run = 0

    @classmethod
    def from_environment(cls, rank: int, world: int, audio_readers: int) -> ControlChannel:
        """A client of the store torchrun started (MASTER_ADDR / MASTER_PORT), under our own key prefix."""
        store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), is_master=False, wait_for_workers=False, timeout=timedelta(hours=1))
        return cls(dist.PrefixStore(PREFIX, store), rank, world, audio_readers)

    def put(self, key: str, data: bytes) -> None:
        self.store.set(key, data)  # type: ignore[arg-type]  # the stub says str; the store takes bytes as they are

    # -- the lead ---------------------------------------------------------------------------------

    def announce(self, reference_image: np.ndarray, prompt: str, seed: int) -> int:
        run = self._next_run
        self._next_run += 1
        self.put(f"run/{run}", pack({"prompt": prompt, "seed": seed}, np.asarray(reference_image)))
        return run

    def relay(self, run: int, audio: Iterator[PcmBlock]) -> Iterator[PcmBlock]:
        """``audio`` as it is, each block also handed to the followers; its end too."""
        index = 0
        try:
            for block in audio:
                if self.audio_readers:
                    self.put(f"run/{run}/audio/{index}", pack({"rate": block.sample_rate}, block.samples))
                index += 1
                yield block
        finally:
            if self.audio_readers:
                self.put(f"run/{run}/audio/{index}", pack({"end": True}))

    def shutdown(self) -> None:
        """No more runs for now: the followers' ``commands`` ends (a later ``commands`` takes the runs after it)."""
        self.put(f"run/{self._next_run}", pack({"shutdown": True}))
        self._next_run += 1

    # -- the followers ----------------------------------------------------------------------------

    def commands(self) -> Iterator[RunCommand]:
        while True:
            run = self._next_run
            header, image = unpack(self.take(f"run/{run}", readers=self.world - 1))
            self._next_run += 1
            if header.get("shutdown"):
                return
            assert image is not None, "a run command carries the reference image"
            yield RunCommand(run, image, str(header["prompt"]), int(header["seed"]))  # type: ignore[call-overload]

    def audio(self, run: int) -> Iterator[PcmBlock]:
        index = 0
        while True:
            header, samples = unpack(self.take(f"run/{run}/audio/{index}", readers=self.audio_readers))
            if header.get("end"):
                return
            assert samples is not None, "an audio message carries samples"
            yield PcmBlock(samples, int(header["rate"]))  # type: ignore[call-overload]
            index += 1

    def take(self, key: str, readers: int) -> bytes:
        """Wait for ``key`` host-side (checking for a failure elsewhere), read it, and delete it once every reader has."""
        self.wait(key)
        value = self.store.get(key)
        if self.store.add(f"{key}/read", 1) >= readers:
            self.store.delete_key(key)
            self.store.delete_key(f"{key}/read")
        return value

    def wait(self, key: str) -> None:
        """Poll for ``key`` (1 ms at first, backing off to 20 ms: an idle wait costs next to nothing, a busy one little latency)."""
        pause = POLL_FIRST_S
        while not self.store.check([key]):
            self.raise_if_failed()
            time.sleep(pause)
            pause = min(2 * pause, POLL_LONGEST_S)

    # -- everyone ---------------------------------------------------------------------------------

    def fail(self, message: str) -> None:
        """Record this rank's failure, unless another rank's came first."""
        self.store.compare_set("error", "", f"rank {self.rank}: {message}")

    def failure(self) -> str | None:
        if not self.store.check(["error"]):
            return None
        return self.store.get("error").decode()

    def raise_if_failed(self) -> None:
        message = self.failure()
        if message is not None:
            raise RankFailed(f"the session stopped: {message}")
