"""A bad residency config is a clear InputError that names the bad part, before any request runs."""

from __future__ import annotations

import pytest
import torch

from avatarstream.errors import InputError
from avatarstream.families.assemble import build_pipeline
from avatarstream.runtime.policies import parse_residency
from avatarstream.runtime.residency import Runtime
from runtime.helpers import deep_family

MODULES = ("vae", "audio_encoder", "text_encoder", "reference_encoder", "a2v_dit", "sr_dit")


def test_parse_the_command_line_form() -> None:
    text = " a2v_dit=streamed:2, sr_dit=offloaded ,default=resident,vae=sharded:offload+bf16"
    assert parse_residency(text, MODULES) == {
        "a2v_dit": "streamed:2",
        "sr_dit": "offloaded",
        "default": "resident",
        "vae": "sharded:offload+bf16",
    }
    assert parse_residency("", MODULES) == {}
    assert parse_residency("offloaded", MODULES) == {"default": "offloaded"}  # a policy alone is every module's
    assert parse_residency("streamed:2,vae=resident", MODULES) == {"default": "streamed:2", "vae": "resident"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a2v=streamed", r"unknown module 'a2v' in residency config; this model has: vae, audio_encoder"),
        ("a2v_dit=bogus", r"unknown residency policy 'bogus' for 'a2v_dit'; choose one of: resident, offloaded, streamed, sharded"),
        ("a2v_dit=streamed:0", r"residency for 'a2v_dit': streamed slots must be a whole number >= 1, got '0'"),
        ("a2v_dit=streamed:two", r"streamed slots must be a whole number >= 1, got 'two' \(e.g. streamed:2\)"),
        ("sr_dit=sharded:fast", r"residency for 'sr_dit': unknown sharded option 'fast'"),
        ("vae=offloaded:3", r"residency for 'vae': residency policy 'offloaded' takes no option"),
        ("a2v_dit", r"bad residency entry 'a2v_dit'; write module=policy"),
        ("offloaded:2", r"residency for 'default': residency policy 'offloaded' takes no option"),
        ("a2v_dit=", r"bad residency entry 'a2v_dit='"),
        ("vae=resident,vae=offloaded", r"residency for 'vae' is given twice"),
        ("default=sometimes", r"unknown residency policy 'sometimes' for 'default'"),
    ],
)
def test_bad_command_line_config(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_residency(text, MODULES)


def test_runtime_rejects_a_bad_policy_when_built() -> None:
    with pytest.raises(InputError, match="unknown residency policy 'fast' for 'a2v_dit'"):
        Runtime(torch.device("cpu"), {"a2v_dit": "fast"})
    with pytest.raises(InputError, match="streamed slots"):
        Runtime(torch.device("cpu"), {"default": "streamed:-1"})


def test_bind_rejects_modules_the_model_does_not_have() -> None:
    family = deep_family()
    runtime = Runtime(torch.device("cpu"), {"a2v": "offloaded"})
    with pytest.raises(InputError, match=r"names \['a2v'\], which this model does not have; its modules are: a2v_dit, audio_encoder"):
        runtime.bind(family.modules.values())


def test_streaming_a_module_without_blocks_is_refused() -> None:
    family = deep_family()
    runtime = Runtime(torch.device("cpu"), {"vae": "streamed:2"})
    with pytest.raises(InputError, match="module 'vae' cannot be streamed: it has no 'blocks'"):
        runtime.bind(family.modules.values())


def test_sharding_without_a_process_group_is_refused() -> None:
    family = deep_family()
    runtime = Runtime(torch.device("cpu"), {"a2v_dit": "sharded"})
    with pytest.raises(InputError, match="needs one process per GPU: launch with --nproc N"):
        runtime.bind(family.modules.values())


def test_the_pipeline_fails_before_the_first_chunk() -> None:
    with pytest.raises(InputError, match="'audio_encoder' cannot be streamed"):
        build_pipeline(deep_family(), torch.device("cpu"), residency={"audio_encoder": "streamed"}).prepare()


def test_default_streamed_streams_what_has_blocks_and_leaves_the_rest_resident(capsys: pytest.CaptureFixture[str]) -> None:
    family = deep_family()
    runtime = Runtime(torch.device("cpu"), parse_residency("streamed:2", family.modules))
    runtime.bind(family.modules.values())
    kinds = {name: runtime.residency(module).name for name, module in family.modules.items()}
    assert kinds["a2v_dit"] == kinds["sr_dit"] == "streamed"
    assert kinds["vae"] == kinds["audio_encoder"] == "resident"
    assert capsys.readouterr().err.count("note: vae has no transformer blocks to stream; it stays resident") == 1
