"""The stage pipeline: the final stages of chunk k on a decode rank of their own while chunk k+1 generates.

The lead announces each stretch of final latents in the store (host-side,
so an idle decode rank never sits in a receive), sends the latents point to
point, and a ``FinalizeWorker`` thread collects the frames coming back, in order. At
most ``max_pending`` stretches are in flight (two: one decoding, one on its
way), so memory stays bounded. Frames come back to the lead, which publishes
them with the audio it holds; encoding was already off the generating thread
(the publisher's own).

Under ``steps=N`` the final latents are made on the last step's rank: it
sends them to the decode rank (``FinalLatentsHandOn``), or runs the final
stages itself when there is none, and the lead only announces the stretches
(their shapes are its own partly denoised latents') and collects the frames.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import torch
import torch.distributed as dist

from avatarstream.runtime.device_ops import DeviceOps
from avatarstream.runtime.overlap import FinalizeWorker
from avatarstream.runtime.parallel.control import ControlChannel, pack, unpack
from avatarstream.runtime.parallel.strategy import RoleStrategy

DTYPES = {str(t): t for t in (torch.float32, torch.bfloat16, torch.float16)}
HEADER = 4  # frames, height, width, channels
MAX_PENDING_SENDS = 2  # stretches the last step's rank keeps under way to the decode rank
MAX_STAGES = 8  # timings sent back per stretch (the family's final stages; -1 marks unused slots)


@dataclass(frozen=True)
class Stretch:
    """Final latents on their way to the decode rank, and the chunk they came from."""

    latents: torch.Tensor
    frames_range: tuple[int, int]
    chunk: tuple[str, int]


#: What the decode rank reads when the run has ended and its last final stage holds frames: give them out.
FLUSH = "flush"


@dataclass(frozen=True)
class Decoded:
    frames: np.ndarray
    stage_seconds: list[float]


class RemoteWork(Protocol):
    """A stretch to finish elsewhere and what to make of the frames that come back."""

    @property
    def stretch(self) -> Stretch | None:
        """None: the run's end, for final stages that hold frames (their ``flush``)."""
        ...

    def complete(self, decoded: Decoded) -> Any: ...


def _key(run: int, index: int) -> str:
    return f"run/{run}/stretch/{index}"


def wire_device(group: dist.ProcessGroup, device: torch.device) -> torch.device:
    """NCCL moves device tensors, gloo host ones."""
    return device if dist.get_backend(group) == "nccl" else torch.device("cpu")


class RemoteFinalizer:
    """The lead's side, with ``FinalizeWorker``'s interface: ``submit`` sends a stretch at once; the worker's thread
    receives its frames and completes them, in order, at most ``max_pending`` in flight."""

    def __init__(self, control: ControlChannel, run: int, to_decoder: dist.ProcessGroup | None, from_decoder: dist.ProcessGroup, decoder: int,
                 ops: DeviceOps, max_pending: int = 2, *, announce: bool = True) -> None:  # fmt: skip
        """``to_decoder`` None: the latents go to ``decoder`` from another rank (the last step's, under ``steps=N``); ``announce``
        False: ``decoder`` makes the frames of its own latents in order and reads no announcements."""
        self.control, self.run, self.decoder, self.announce = control, run, decoder, announce
        self.to_decoder, self.from_decoder = to_decoder, from_decoder
        self.device = wire_device(from_decoder, ops.device)
        self._sent = 0
        self._worker: FinalizeWorker[Any] = FinalizeWorker(ops, max_pending)

    def submit(self, work: RemoteWork, inputs: Any = None) -> None:
        """Send the stretch now (``inputs``, what a local worker would keep alive for its stream, are sent before this returns)."""
        stretch = work.stretch
        if stretch is None:
            self._flush(work)
            return
        latents = stretch.latents.to(self.device).contiguous()
        if self.announce:
            header = {"start": stretch.frames_range[0], "end": stretch.frames_range[1], "chunk": list(stretch.chunk), "dtype": str(latents.dtype),
                      "shape": list(latents.shape)}  # fmt: skip
            self.control.put(_key(self.run, self._sent), pack({"stretch": header}))
        self._sent += 1
        sending = None if self.to_decoder is None else dist.isend(latents, self.decoder, group=self.to_decoder)
        in_flight = (sending, latents)  # the latents stay alive until their send is done

        def finish() -> Any:
            decoded = self._receive()
            if in_flight[0] is not None:
                in_flight[0].wait()
            return work.complete(decoded)

        self._worker.submit(finish)

    def _flush(self, work: RemoteWork) -> None:
        """Ask the decode rank for the frames its last final stage still holds (no latents go with it)."""
        if self.announce:  # else the rank making the frames flushes after its own last stretch
            self.control.put(_key(self.run, self._sent), pack({FLUSH: True}))
            self._sent += 1
        self._worker.submit(lambda: work.complete(self._receive()))

    def _receive(self) -> Decoded:
        header = torch.empty(HEADER, dtype=torch.int64, device=self.device)
        dist.recv(header, self.decoder, group=self.from_decoder)
        frames = torch.empty(tuple(header.tolist()), dtype=torch.uint8, device=self.device)
        dist.recv(frames, self.decoder, group=self.from_decoder)
        seconds = torch.empty(MAX_STAGES, dtype=torch.float64, device=self.device)
        dist.recv(seconds, self.decoder, group=self.from_decoder)
        return Decoded(frames.cpu().numpy(), [s for s in seconds.tolist() if s >= 0])

    def ready(self, *, block: bool = False) -> Iterator[Any]:
        return self._worker.ready(block=block)

    def drain(self) -> Iterator[Any]:
        return self._worker.drain()

    def close(self) -> None:
        """Tell the decode rank the run is over, and take back the frames of stretches still in flight (a run stopped
        early drops them): the decode rank sends every stretch it was given, and must be free for the next run."""
        if self.announce:
            self.control.put(_key(self.run, self._sent), pack({"end": True}))
        self._worker.close(cancel=False)  # a failed decode rank: its error is reported elsewhere


class LocalWork(Protocol):
    """A stretch of final latents made on this rank: to send on, or to finish here."""

    @property
    def stretch(self) -> Stretch | None:
        """None: the run's end, for final stages that hold frames."""
        ...

    def decoded(self) -> Decoded: ...


class FinalLatentsHandOn:
    """The last step's rank under ``steps=N``, with ``FinalizeWorker``'s interface: each stretch of final latents goes to the
    decode rank, or, without one, through the final stages here, its frames to the lead. Nothing comes back to this rank."""

    def __init__(self, to_decoder: dist.ProcessGroup | None, from_decoder: dist.ProcessGroup, decoder: int, device: torch.device) -> None:
        self.to_decoder, self.from_decoder, self.decoder, self.device = to_decoder, from_decoder, decoder, device
        self._sending: deque[tuple[dist.Work, torch.Tensor]] = deque()

    def submit(self, work: LocalWork, inputs: Any = None) -> None:
        if self.to_decoder is None:
            send_decoded(work.decoded(), self.from_decoder, self.device)
            return
        if work.stretch is None:  # the run's end: the lead tells the decode rank to give out what it holds
            return
        while len(self._sending) >= MAX_PENDING_SENDS:
            self._sending.popleft()[0].wait()
        latents = work.stretch.latents.to(wire_device(self.to_decoder, self.device)).contiguous()
        sending = dist.isend(latents, self.decoder, group=self.to_decoder)
        assert sending is not None, "the last step's rank is in the group it sends on"
        self._sending.append((sending, latents))

    def ready(self, *, block: bool = False) -> Iterator[Any]:
        return iter(())

    def drain(self) -> Iterator[Any]:
        return iter(())

    def close(self) -> None:
        while self._sending:
            self._sending.popleft()[0].wait()


def receive_stretches(control: ControlChannel, run: int, to_decoder: dist.ProcessGroup, device: torch.device, source: int = 0) -> Iterator[Stretch | str]:
    """The decode rank's side: every stretch of a run, in order, until the lead closes it; the latents come from
    ``source`` (the lead, or the last step's rank under ``steps=N``), the announcements from the lead. ``FLUSH``: the run
    has ended, and the final stages give out the frames they hold.

    Double-buffered: once a stretch has arrived, the receive of the next one is
    posted (when the lead has announced it) before this one is decoded.
    """
    wire = wire_device(to_decoder, device)

    def post(index: int, *, wait: bool) -> tuple[dict[str, Any], torch.Tensor, dist.Work] | bool | str:
        """The receive of stretch ``index`` under way; False when the run is over, True when not announced yet (``wait=False``),
        ``FLUSH`` at the run's end for final stages that hold frames."""
        key = _key(run, index)
        if not wait and not control.store.check([key]):
            return True
        header, _ = unpack(control.take(key, readers=1))
        if header.get("end"):
            return False
        if header.get(FLUSH):
            return FLUSH
        spec: dict[str, Any] = header["stretch"]  # type: ignore[assignment]
        latents = torch.empty(spec["shape"], dtype=DTYPES[spec["dtype"]], device=wire)
        receiving = dist.irecv(latents, source, group=to_decoder)
        assert receiving is not None, "the decode rank is in the group it receives on"
        return spec, latents, receiving

    index = 0
    current = post(index, wait=True)
    while not isinstance(current, bool):
        if current == FLUSH:
            yield FLUSH
            index += 1
            current = post(index, wait=True)
            continue
        assert not isinstance(current, str)
        spec, latents, receiving = current
        receiving.wait()
        upcoming = post(index + 1, wait=False)
        yield Stretch(latents.to(device), (int(spec["start"]), int(spec["end"])), (str(spec["chunk"][0]), int(spec["chunk"][1])))
        index += 1
        current = post(index, wait=True) if upcoming is True else upcoming


def send_decoded(decoded: Decoded, from_decoder: dist.ProcessGroup, device: torch.device) -> None:
    wire = wire_device(from_decoder, device)
    frames = torch.from_numpy(np.ascontiguousarray(decoded.frames)).to(wire)
    dist.send(torch.tensor(list(frames.shape), dtype=torch.int64, device=wire), 0, group=from_decoder)
    dist.send(frames, 0, group=from_decoder)
    seconds = (decoded.stage_seconds + [-1.0] * MAX_STAGES)[:MAX_STAGES]
    dist.send(torch.tensor(seconds, dtype=torch.float64, device=wire), 0, group=from_decoder)


class DecodeRank(RoleStrategy):
    """``decode``: one rank more, which runs the final stages of chunk k while the others generate chunk k+1."""

    key = "decode"
    summary = "decode: one more rank for the final stages (super-resolution, VAE decode) of each stretch"
