"""Warnings about what a run was given (its weights, reference, audio), reported where its user looks.

A warning is a sentence with its advice, such as "random weights: the video is
noise". Two kinds reach a run:

* about the weights, the same for every run of a loaded model: a family lists
  them in its ``warnings`` attribute (``families.base.model_warnings`` reads it; a family
  without one has none);
* about one run's inputs: the code that reads an input calls ``warn(text)``
  (``sources/warn.py``, below the readers). Whoever runs the render collects
  them with ``collecting(warnings)`` around the calls that read inputs;
  nothing collecting, the text goes to stderr.

``api.render`` prints each once on stderr (``warning: ...``) and puts them in
the report's ``warnings``; the server puts them in the session's JSON
(``warnings``) and in its structured log.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Iterator

from avatarstream.sources.pcm import PcmBlock
from avatarstream.sources.warn import warnings_to


class Warnings:
    """Distinct warnings in the order they came; adding is safe from any thread, and ``on_new`` hears each one once."""

    def __init__(self, texts: Iterable[str] = (), on_new: Callable[[str], None] | None = None) -> None:
        self._texts: list[str] = []
        self._lock = threading.Lock()
        self.on_new = on_new
        self.extend(texts)

    def add(self, text: str) -> None:
        with self._lock:
            if text in self._texts:
                return
            self._texts.append(text)
        if self.on_new is not None:
            self.on_new(text)

    def extend(self, texts: Iterable[str]) -> None:
        for text in texts:
            self.add(text)

    def list(self) -> list[str]:
        with self._lock:
            return list(self._texts)

    def __iter__(self) -> Iterator[str]:
        return iter(self.list())

    def __len__(self) -> int:
        return len(self._texts)


@contextlib.contextmanager
def collecting(warnings: Warnings | None) -> Iterator[None]:
    """``warn`` adds to ``warnings`` inside the block (on this thread; None: leave it as it is)."""
    if warnings is None:
        yield
        return
    with warnings_to(warnings.add):
        yield


def audio_rate_warning(rate: int, model_rate: int) -> str | None:
    """A warning for audio recorded below the rate the model listens at (resampling down from a higher rate loses nothing it hears)."""
    if rate >= model_rate:
        return None
    return (
        f"the audio is sampled at {rate} Hz, below the model's {model_rate} Hz: it is upsampled and has nothing above "
        f"{rate // 2} Hz, which the model listens to, so lip sync may suffer; record or export the audio at {model_rate} Hz or more"
    )


def warn_on_audio_rate(blocks: Iterable[PcmBlock], model_rate: int, warnings: Warnings) -> Iterator[PcmBlock]:
    """``blocks`` as they are, adding ``audio_rate_warning`` for the first one's rate (a live source says its rate only then)."""
    checked = False
    for block in blocks:
        if not checked:
            checked = True
            text = audio_rate_warning(block.sample_rate, model_rate)
            if text is not None:
                warnings.add(text)
        yield block
