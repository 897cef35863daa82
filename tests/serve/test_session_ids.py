"""Session ids never start with a character a shell or a command line takes for something else."""

from __future__ import annotations

from avatarstream.serve.session_ids import new_session_id


def test_ids_start_with_a_letter_or_digit_and_stay_unguessable() -> None:
    ids = [new_session_id() for _ in range(3000)]  # a plain token_urlsafe starts with '-' or '_' 1 time in 32
    assert all(sid[0].isalnum() for sid in ids), [sid for sid in ids if not sid[0].isalnum()][:3]
    assert len(set(ids)) == len(ids) and {len(sid) for sid in ids} == {24}
    assert {c for sid in ids for c in sid[1:]} >= {"-", "_"}  # the rest is still the whole URL-safe alphabet
