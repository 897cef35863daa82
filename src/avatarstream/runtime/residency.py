"""Where module weights live while a session runs (DESIGN.md §6).

The pipeline asks the runtime to ``acquire`` a stage's modules before it runs
and ``release`` them after, and hints which modules the next stage uses so a
policy can start moving them early. Stages never move weights themselves.
The runtime applies one policy per module (``policies.py``), and keeps the
figures of the report: exposed switch time, host-to-device bytes and peak
device memory.

Stages may run on two threads at once (the pipeline's ``overlap`` finishes
chunk k on a worker while chunk k+1 generates). Each thread is a lane with its
own hint and switch marks; policy state changes under one lock.

A module belongs to one runtime at a time: a family builds a new pipeline (and
runtime) per run in benchmarks, so the runtime that binds a module takes it
over from the previous one, whose hooks and device buffers go, for good: the
previous runtime refuses to run it again, in one error, rather than take it
back mid-run from a pipeline that may be running it on another thread (two
runtimes doing that would remove each other's hooks at every stage and wait on
each other's locks). Pipelines whose runs go on at once over one set of modules
share one runtime (``families.assemble.build_sibling_pipeline``).
"""

from __future__ import annotations

import sys
import threading
import weakref
from collections.abc import Iterable, Mapping
from typing import Any

import torch

from avatarstream.errors import InputError
from avatarstream.runtime.compiled import DEFAULT_BACKEND, compile_blocks, compile_seconds
from avatarstream.runtime.device_ops import device_ops
from avatarstream.runtime.module import Module
from avatarstream.runtime.parallel import groups as parallel_groups
from avatarstream.runtime.parallel.groups import ParallelGroups
from avatarstream.runtime.policies import DEFAULT_KEY, PolicySpec
from avatarstream.runtime.policy import Residency
from avatarstream.runtime.sharding import is_sharded
from avatarstream.runtime.streamed import has_blocks
from avatarstream.runtime.switches import switch_timer

_owners: weakref.WeakKeyDictionary[torch.nn.Module, Runtime] = weakref.WeakKeyDictionary()  # network -> its runtime
_owners_lock = threading.Lock()


class _Lane(threading.local):
    """What one thread's sequence of stages told the runtime (class attributes are each thread's defaults)."""

    upcoming: tuple[Module, ...] = ()
    prefetch_due = False
    in_forward = 0  # depth of bound networks' forward calls running on this thread


class Runtime:
    """Applies one residency policy per module; the single door through which weights move.

    ``stage_starts(stage, modules, upcoming)`` acquires the stage's modules and
    remembers the next stage's; their prefetch is issued once this stage's
    first network forward has been queued (the copy then overlaps this stage's
    compute instead of delaying its first kernel). A module driven through
    another method (``vae.decode``) triggers it when its first child starts,
    and a stage that runs no module triggers it when it ends.
    ``stage_ends`` releases the modules the next stage does not use again.
    """

    def __init__(
        self, device: torch.device, policies: Mapping[str, str] | None = None, default: str = "resident", *, parallel: ParallelGroups | None = None
    ) -> None:
        """``parallel``: how this process shares the session with others (the groups ``launch.init_rank`` made; None: with no
        other process)."""
        config = dict(policies or {})
        self.device = device
        self.ops = device_ops(device)
        self._default = PolicySpec.parse(config.pop(DEFAULT_KEY, default))
        self._specs = {name: PolicySpec.parse(text, name) for name, text in config.items()}
        self._residencies: dict[str, Residency] = {}
        self._hooks: dict[str, list[torch.utils.hooks.RemovableHandle]] = {}
        self._timer = switch_timer(device)
        self._lane = _Lane()
        self._lock = threading.RLock()
        self._lost: set[str] = set()  # modules another runtime took over: this one no longer runs them
        self._h2d_taken = 0
        self._compiled: list[str] = []  # modules whose blocks compile() compiled
        self._compile_s_at: float | None = None  # the process's compile seconds when compile() was first called
        self._syncs_taken = (0, 0)  # device_syncs, host_syncs as the previous chunk's figures left them
        self._peak_weight_bytes = 0
        self._chunk_peak_weight_bytes = 0
        self._peak_device_bytes: int | None = None
        self._chunk_peak_device_bytes: int | None = None
        self.parallel = parallel if parallel is not None else parallel_groups.one_process()

    # -- policies -------------------------------------------------------------------------------

    def bind(self, modules: Iterable[Module]) -> None:
        """Set every module up under its policy now (packing, sharding), and check the config names only real modules."""
        modules = list(modules)
        names = {m.name for m in modules}
        unknown = sorted(set(self._specs) - names)
        if unknown:
            raise InputError(f"residency config names {unknown}, which this model does not have; its modules are: {', '.join(sorted(names))}")
        for module in modules:
            self.residency(module)

    def residency(self, module: Module) -> Residency:
        """The module's policy instance (created on first sight, taking the module over from any earlier runtime)."""
        with self._lock:
            found = self._residencies.get(module.name)
            if found is not None:
                return found
            if module.name in self._lost:
                raise InputError(
                    f"module {module.name!r} was taken over by a pipeline built later over the same loaded model, so this pipeline "
                    "no longer runs; build it again to use it, and to run several pipelines at once over one model, build the others "
                    "with build_sibling_pipeline (one runtime places the modules for all)"
                )
        spec = self._spec(module)
        self._take_over(module, spec)  # outside this runtime's lock: the previous owner's is taken, never both at once
        with self._lock:
            found = self._residencies.get(module.name)
            if found is None:
                self.ops.choose_kernels(module.network)
                found = spec.build(module, self.ops, self.parallel)
                self._residencies[module.name] = found
                self._hooks[module.name] = self._watch(module.network)
            return found

    def _spec(self, module: Module) -> PolicySpec:
        """The module's own policy, else the default; a default of ``streamed`` leaves modules without blocks resident."""
        if module.name in self._specs:
            return self._specs[module.name]
        if self._default.policy.name == "streamed" and not has_blocks(module.network):
            print(f"note: {module.name} has no transformer blocks to stream; it stays resident", file=sys.stderr)
            return PolicySpec.parse("resident", module.name)
        return self._default

    def _take_over(self, module: Module, spec: PolicySpec) -> None:
        if is_sharded(module.network) and not spec.policy.sequential_only:
            raise InputError(
                f"module {module.name!r} was sharded by an earlier pipeline and sharding cannot be undone; load the model again to use {spec.text!r}"
            )
        with _owners_lock:
            previous = _owners.get(module.network)
            _owners[module.network] = self
        if previous is not None and previous is not self:
            previous.hand_over(module)

    def hand_over(self, module: Module) -> None:
        """Let another runtime take ``module``: its policy lets go of the device and its hooks are removed."""
        with self._lock:
            self._lost.add(module.name)
            residency = self._residencies.pop(module.name, None)
            if residency is not None:
                residency.close()
            for hook in self._hooks.pop(module.name, []):
                hook.remove()

    def _watch(self, network: torch.nn.Module) -> list[torch.utils.hooks.RemovableHandle]:
        """Hooks that find the moment to issue the next stage's prefetch (see the class docstring)."""
        hooks = [network.register_forward_pre_hook(self._forward_starts), network.register_forward_hook(self._forward_ends)]
        hooks.extend(child.register_forward_pre_hook(self._child_starts) for child in network.children())
        return hooks

    @property
    def sequential_only(self) -> bool:
        """Whether a bound module's policy forbids overlapping stages (sharded: ranks must issue collectives in one order)."""
        with self._lock:
            return any(r.sequential_only for r in self._residencies.values())

    def policy_name(self, module: Module) -> str:
        return self._specs.get(module.name, self._default).text

    def acquire(self, modules: Iterable[Module]) -> None:
        with self._lock:
            for module in modules:
                self.residency(module).acquire()
            self._note_weight_bytes()

    def release(self, modules: Iterable[Module]) -> None:
        with self._lock:
            for module in modules:
                self.residency(module).release()

    def prefetch(self, modules: Iterable[Module]) -> None:
        with self._lock:
            for module in modules:
                self.residency(module).prefetch()
            self._note_weight_bytes()

    def compile(self, backend: str = DEFAULT_BACKEND) -> list[str]:
        """Compile the transformer blocks of every bound module that has them (``--compile``, see ``compiled``); their names.

        Refused with one error where compiled blocks could not run as they are."""
        with self._lock:
            found = [r for _, r in sorted(self._residencies.items()) if has_blocks(r.module.network)]
            for residency in found:
                if residency.sequential_only:
                    raise InputError(
                        f"--compile cannot compile {residency.module.name!r} under {self.policy_name(residency.module)!r}: FSDP2 gathers a sharded "
                        "block's parameters in hooks around its forward, which compiled blocks do not run here yet; use resident, offloaded or "
                        "streamed for it, or leave --compile off"
                    )
            if found and self.parallel.layout.sp > 1:
                raise InputError(
                    f"--compile with --parallel sp={self.parallel.layout.sp}: the all-to-alls inside each block's self-attention are not compiled yet; "
                    "use a cfg or decode layout, or leave --compile off"
                )
            if self._compile_s_at is None:
                self._compile_s_at = compile_seconds()
            for residency in found:
                compile_blocks(residency.module.network, backend)
                self._compiled.append(residency.module.name)
            return [r.module.name for r in found]

    def close(self) -> None:
        """Let go of every module: no hooks, no device buffers of the policies."""
        with self._lock:
            for residency in list(self._residencies.values()):
                self.hand_over(residency.module)

    # -- the pipeline's calls -------------------------------------------------------------------

    def stage_starts(self, stage: str, modules: tuple[Module, ...], upcoming: tuple[Module, ...]) -> None:
        self._timer.acquiring()
        self.acquire(modules)
        lane = self._lane
        lane.upcoming, lane.prefetch_due, lane.in_forward = upcoming, True, 0
        self._timer.ready(stage)

    def stage_ends(self, stage: str, modules: tuple[Module, ...]) -> None:
        self._timer.stage_done(stage)
        self._issue_prefetch()
        self.release(m for m in modules if m not in self._lane.upcoming)
        self._timer.released()

    def _forward_starts(self, *_: Any) -> None:
        self._lane.in_forward += 1

    def _forward_ends(self, *_: Any) -> None:
        self._lane.in_forward -= 1
        self._issue_prefetch()

    def _child_starts(self, *_: Any) -> None:
        if not self._lane.in_forward:  # the module is driven through another method than forward
            self._issue_prefetch()

    def _issue_prefetch(self) -> None:
        lane = self._lane
        if lane.prefetch_due:
            lane.prefetch_due = False
            self.prefetch(lane.upcoming)

    # -- figures --------------------------------------------------------------------------------

    def _note_weight_bytes(self) -> None:
        held = sum(r.device_bytes() for r in self._residencies.values())
        self._chunk_peak_weight_bytes = max(self._chunk_peak_weight_bytes, held)
        self._peak_weight_bytes = max(self._peak_weight_bytes, held)

    @property
    def h2d_bytes(self) -> int:
        """Bytes moved host-to-device by the policies since the runtime was made."""
        return self.ops.h2d_bytes

    def take_chunk_stats(self) -> dict[str, int | None]:
        """Figures since the previous call (the report calls it once per chunk).

        ``h2d_bytes``: bytes moved host-to-device; ``peak_device_bytes``: the
        device allocator's peak (None on CPU); ``peak_weight_bytes``: the most
        weight bytes the policies held on the device at once (meaningful on CPU too);
        ``device_syncs`` and ``host_syncs``: whole-device waits and device values read on the host.
        """
        with self._lock:
            self._fold_device_peak()
            syncs = {"device_syncs": self.ops.device_syncs - self._syncs_taken[0], "host_syncs": self.ops.host_syncs - self._syncs_taken[1]}
            self._syncs_taken = (self.ops.device_syncs, self.ops.host_syncs)
            stats = {
                **syncs,
                "h2d_bytes": self.ops.h2d_bytes - self._h2d_taken,
                "peak_device_bytes": self._chunk_peak_device_bytes,
                "peak_weight_bytes": self._chunk_peak_weight_bytes,
            }
            self._h2d_taken = self.ops.h2d_bytes
            self._chunk_peak_device_bytes = None
            self._chunk_peak_weight_bytes = sum(r.device_bytes() for r in self._residencies.values())
            return stats

    def peak_device_bytes(self) -> int | None:
        """Peak device allocator bytes over the whole run (None on CPU).

        Read it here rather than from the allocator: ``take_chunk_stats`` resets the allocator's peak every chunk.
        """
        with self._lock:
            self._fold_device_peak()
            return self._peak_device_bytes

    def _fold_device_peak(self) -> None:
        peak = self.ops.take_peak_bytes()
        if peak is not None:
            self._chunk_peak_device_bytes = max(self._chunk_peak_device_bytes or 0, peak)
            self._peak_device_bytes = max(self._peak_device_bytes or 0, peak)

    def switch_summary(self) -> dict[str, dict[str, float]]:
        """Per kind of switch: count, mean and max exposed milliseconds."""
        return self._timer.summary()

    def summary(self) -> dict[str, Any]:
        """The runtime's part of the run report (stage switches come separately, from ``switch_summary``)."""
        return {
            "policies": {name: self.policy_name(r.module) for name, r in sorted(self._residencies.items())},
            "h2d_bytes": self.h2d_bytes,
            "device_syncs": self.ops.device_syncs,
            "host_syncs": self.ops.host_syncs,
            "peak_weight_bytes": self._peak_weight_bytes,
            "peak_device_bytes": self.peak_device_bytes(),
            "compiled": sorted(set(self._compiled)),
            "compile_s": None if self._compile_s_at is None else round(compile_seconds() - self._compile_s_at, 3),  # lazily, in the first chunks
        }
