"""Where this rank's final stretches go in a run split over processes: the role a layout gives it.

With a decode rank the lead sends each stretch of final latents there and
collects the frames; under ``steps=N`` the last step's rank holds the final
latents and hands them on (to the decode rank, or through the final stages
there, its frames to the lead), and the lead only announces the stretches and
collects the frames. Every other case finishes its stretches where they are
made (or, on a follower, makes none: ``runs_finals``).
"""

from __future__ import annotations

from avatarstream.runtime.device_ops import DeviceOps
from avatarstream.runtime.parallel.groups import ParallelGroups
from avatarstream.runtime.parallel.stage_pipe import FinalLatentsHandOn, RemoteFinalizer


def finals_worker(groups: ParallelGroups, run: int, ops: DeviceOps) -> RemoteFinalizer | FinalLatentsHandOn | None:
    """The worker that takes this rank's stretches of run ``run`` to another rank; None: they finish here (or nowhere)."""
    layout = groups.layout
    if not groups.distributed:
        return None
    if layout.steps > 1 and groups.holds_final_latents:
        assert groups.from_decoder is not None, "a steps layout has its groups"
        return FinalLatentsHandOn(groups.to_decoder, groups.from_decoder, layout.finishing_rank, ops.device)
    if groups.role != "lead":
        return None
    if layout.steps > 1:
        assert groups.control is not None and groups.from_decoder is not None, "a steps layout has its groups"
        in_flight = layout.steps + 2  # a block's frames come back once every step (and the decode) is done: the lead runs ahead
        return RemoteFinalizer(groups.control, run, None, groups.from_decoder, layout.finishing_rank, ops, in_flight, announce=layout.decode)
    if layout.decode_rank is not None:
        assert groups.control is not None and groups.to_decoder is not None and groups.from_decoder is not None, "a decode rank has its groups"
        return RemoteFinalizer(groups.control, run, groups.to_decoder, groups.from_decoder, layout.decode_rank, ops)
    return None


def runs_finals(groups: ParallelGroups, *, collective_finals: bool) -> bool:
    """Whether this rank hands stretches to final stages: the lead always (itself, or through another rank), the rank
    holding the final latents under ``steps=N``, and every rank when a final stage's module needs all ranks' forwards
    (``collective_finals``, a sharded decoder) and no decode rank takes them."""
    return groups.role == "lead" or groups.holds_final_latents or (collective_finals and groups.layout.decode_rank is None)
