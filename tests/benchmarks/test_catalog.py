"""`bench --help` lists the scenarios from a catalog that loads no torch; it names exactly the scenarios that exist."""

from __future__ import annotations

from avatarstream.benchmarks.catalog import SUMMARIES
from avatarstream.benchmarks.scenarios import SCENARIOS
from avatarstream.runtime.names import POLICY_NAMES
from avatarstream.runtime.policies import POLICIES


def test_the_catalog_names_every_scenario_with_its_docstring() -> None:
    assert list(SUMMARIES) == list(SCENARIOS)
    for name, fn in SCENARIOS.items():
        assert (fn.__doc__ or "").partition("\n")[0] == SUMMARIES[name], name


def test_the_policy_names_the_help_lists_are_the_policies() -> None:
    assert tuple(POLICIES) == POLICY_NAMES
