"""The server's pipelines: the one every session shares, and a few built for sessions that ask for other build options.

A session's ``model_options`` are merged over the server's. When the merged
options of scope ``build`` are the server's, the session runs on the shared
pipeline, as every session did before options could be given per session.
Otherwise it gets a pipeline built for them (over the same loaded modules and
the same runtime, so sessions on different pipelines never take modules from each other),
kept for later sessions with the same options: at most ``limit`` such sets,
the least recently used one without sessions making room for a new one; when
every one is in use a new set is refused (503) rather than the server growing.

A pipeline knows its frame size, and a family fits a reference from the
options it is given, so references are fitted without building anything.

A server started with an upscaler (``--upscale``) runs it on every session
unless the session says ``upscale=false``: that session gets the family's own
pipeline (same modules, frames at the family's size), built like any other.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from avatarstream.errors import InputError
from avatarstream.families.assemble import build_sibling_pipeline
from avatarstream.families.base import Family
from avatarstream.families.options import FamilyOptions
from avatarstream.families.upscaler import Cascade
from avatarstream.input_warnings import Warnings, collecting
from avatarstream.pipeline.pipeline import Pipeline
from avatarstream.publish.settings import EncoderSettings
from avatarstream.serve.model_options import by_name, parse_model_options
from avatarstream.serve.problems import Busy

MAX_OTHER_PIPELINES = 4
Key = tuple[tuple[str, Any], ...]


@dataclass(frozen=True, eq=False)
class Built:
    """A pipeline and the video it makes (its frame size and rate, read from the family right after it was built)."""

    key: Key  # its options of scope build
    options: FamilyOptions  # what it was built with
    pipeline: Pipeline
    encoder: EncoderSettings


def build_key(options: FamilyOptions) -> Key:
    return tuple(sorted(options.given("build").items()))


class Pipelines:
    """The shared pipeline (built at start) and the ones sessions with other build options need."""

    def __init__(
        self,
        family: Family,
        options: FamilyOptions,
        shared: Pipeline,
        preset: str,
        *,
        parallel: bool = False,
        limit: int = MAX_OTHER_PIPELINES,
        retry_after_s: int = 5,
        compile: bool = False,
    ) -> None:
        """``shared``: the pipeline ``family`` built last, from ``options``. ``parallel``: every session runs over several
        processes that follow that one pipeline, so no other can be built. ``compile``: pipelines built here compile their DiT blocks too."""
        self.family = family
        self.options = options
        self.preset = preset
        self.parallel = parallel
        self.limit = limit
        self.retry_after_s = retry_after_s
        self.compile = compile
        self.shared = Built(build_key(options), options, shared, self._encoder(shared))
        self._lock = threading.Lock()
        self._others: OrderedDict[Key, Built] = OrderedDict()  # least recently used first
        self._users: dict[Key, int] = {}

    def session_options(self, text: str) -> FamilyOptions:
        """A session's ``model_options`` form field merged over the server's options."""
        return self.options.merged(parse_model_options(type(self.options), text))

    def acquire(self, options: FamilyOptions, upscale: bool | None = None) -> Built:
        """The pipeline for a session's merged options (blocking: it may build one), with the server's upscaler or without
        (``upscale`` False; None: as the server runs); ``release`` it when the session ends."""
        key = build_key(options)
        if upscale and not isinstance(self.family, Cascade):
            raise InputError("upscale: this server has no upscaler; start it with --upscale NAME (avatarstream families lists them)")
        if upscale is False and isinstance(self.family, Cascade):
            key = (*key, ("upscale", False))
        if key == self.shared.key:
            return self.shared
        if self.parallel:
            changed = ", ".join(sorted({name for name, _ in set(key) ^ set(self.shared.key)}))
            raise InputError(
                f"model_options: this server runs every session over its processes on one pipeline, so a session cannot change "
                f"options of scope build ({changed}); start a server with them"
            )
        with self._lock:
            built = self._others.get(key)
            if built is None:
                self._make_room()
                family = self.family.base if isinstance(self.family, Cascade) and ("upscale", False) in key else self.family
                built = self._others[key] = self._build(key, options, family)
            self._others.move_to_end(key)
            self._users[key] = self._users.get(key, 0) + 1
            return built

    def release(self, built: Built) -> None:
        """A session of ``built`` ended (its pipeline stays for the next session with the same options, while there is room)."""
        if built is self.shared:
            return
        with self._lock:
            if self._users.get(built.key, 0) > 0:
                self._users[built.key] -= 1

    def reference(self, built: Built, path: Path | None, options: FamilyOptions, warnings: Warnings | None = None) -> np.ndarray:
        """The family's reference (``path``, or its default) fitted for ``built``'s pipeline; ``options``: the session's (blocking).
        What the family warns of while reading it goes to ``warnings``."""
        with collecting(warnings):
            image = self.family.reference(path, options)
        height, width = image.shape[:2]
        expected = built.pipeline.reference_size
        if (width, height) != expected:  # a family that sizes its output from the image
            assert expected is not None, "a family's pipeline knows its size"
            raise InputError(
                f"the model fitted this reference to {width}x{height}, but this pipeline takes {expected[0]}x{expected[1]}; give model_options a size"
            )
        return image

    @property
    def in_use(self) -> dict[Key, int]:
        """Sessions on each pipeline other than the shared one."""
        with self._lock:
            return {key: self._users.get(key, 0) for key in self._others}

    def _build(self, key: Key, options: FamilyOptions, family: Family) -> Built:
        try:
            pipeline = build_sibling_pipeline(family, self.shared.pipeline, options)  # one runtime places the modules for all
            if self.compile:
                pipeline.compile()
            encoder = self._encoder(pipeline)
        except InputError as err:
            raise InputError(f"model_options: {by_name(str(err), type(self.options))}") from None
        pipeline.prepare()
        return Built(key, options, pipeline, encoder)

    def _encoder(self, pipeline: Pipeline) -> EncoderSettings:
        """The output of ``pipeline``."""
        assert pipeline.frame_size is not None, "a family's pipeline knows its size"
        width, height = pipeline.frame_size
        try:
            return EncoderSettings(width=width, height=height, fps=self.family.fps, preset=self.preset)
        except ValueError as err:
            raise InputError(str(err)) from err

    def _make_room(self) -> None:
        if len(self._others) < self.limit:
            return
        for key in self._others:
            if self._users.get(key, 0) == 0:
                del self._others[key]
                self._users.pop(key, None)
                return
        raise Busy(
            f"this server already runs sessions on {self.limit} other sets of build options (model_options); "
            "try again when one of them ends, or use the server's own",
            {"Retry-After": str(self.retry_after_s)},
        )
