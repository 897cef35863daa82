"""What a render checks before anything heavy loads, said once for ``avatarstream render`` and ``avatarstream.render``.

The CLI runs it before torch is imported (and before ``--nproc`` starts more
processes), the API before it loads the model, so a mistake in the inputs is
the same one-line ``InputError`` from both and costs no model load. Nothing
here imports torch.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from avatarstream.errors import InputError
from avatarstream.families.options import FamilyOptions
from avatarstream.families.registry import NO_UPSCALE, Upscale, check_weights
from avatarstream.output_paths import check_outputs
from avatarstream.publish.outputs import Outputs
from avatarstream.sources.audio_file import open_audio_file
from avatarstream.sources.reference import load_reference_image

REFERENCE_CHECK_SIZE = 32  # the check decodes the image, at a size where fitting it costs nothing

PathLike = str | os.PathLike[str]


def check_render_inputs(
    audio: PathLike | Iterable[Any] | None,
    reference: PathLike | None,
    outputs: Outputs,
    report: PathLike | None,
    trace: PathLike | None,
    *,
    seed: int,
    model: object,
    weights: PathLike | None,
    model_options: FamilyOptions | Mapping[str, Any] | None = None,
    upscale: Upscale = NO_UPSCALE,
) -> None:
    """Refuse a negative seed, unusable outputs, an audio file or reference image that cannot be read, and, for a model
    named by its registered name, unknown options or a weights folder the family could not load. A loaded family
    (``model`` not a name) was checked when it loaded."""
    if seed < 0:
        raise InputError(f"--seed must be 0 or more, got {seed}")
    check_outputs(outputs, report, trace)
    if isinstance(audio, str | os.PathLike):
        with open_audio_file(audio):
            pass
    if reference is not None:
        load_reference_image(reference, REFERENCE_CHECK_SIZE)
    if isinstance(model, str):
        check_weights(model, weights, model_options)
    upscale.check()
