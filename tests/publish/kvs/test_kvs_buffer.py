"""FragmentBuffer: bounded, resends in order, gives up the right fragment."""

from __future__ import annotations

from avatarstream.publish.kvs.buffer import FragmentBuffer
from avatarstream.publish.kvs.fragmenter import Fragment


def fragment(timecode: int) -> Fragment:
    return Fragment(timecode, b"cluster", packets=10)


def test_full_buffer_gives_up_the_oldest_fragment_not_on_the_wire() -> None:
    buffer = FragmentBuffer(3)
    for t in (1, 2, 3):
        assert buffer.add(fragment(t)) is None
    assert buffer.take_unsent() == fragment(1)
    assert buffer.add(fragment(4)) == fragment(2)  # 1 is in flight: keep it
    assert [buffer.take_unsent(), buffer.take_unsent(), buffer.take_unsent()] == [fragment(3), fragment(4), None]
    assert buffer.add(fragment(5)) == fragment(5)  # everything is in flight: the newcomer goes


def test_rewind_resends_everything_unacknowledged_in_order() -> None:
    buffer = FragmentBuffer(5)
    for t in (1, 2, 3):
        buffer.add(fragment(t))
    while buffer.take_unsent():
        pass
    assert buffer.acknowledge(1) == fragment(1)
    assert buffer.acknowledge(1) is None  # a late duplicate acknowledgement changes nothing
    buffer.rewind()
    assert buffer.in_flight == 0
    assert [buffer.take_unsent(), buffer.take_unsent(), buffer.take_unsent()] == [fragment(2), fragment(3), None]


def test_a_fragment_is_given_up_after_repeated_errors() -> None:
    buffer = FragmentBuffer(5)
    buffer.add(fragment(1))
    buffer.add(fragment(2))
    assert buffer.fail(2, max_attempts=2) == (fragment(2), False)
    assert buffer.fail(2, max_attempts=2) == (fragment(2), True)
    assert buffer.fail(None, max_attempts=2) == (fragment(1), False)  # no timecode: the oldest, as the SDK does
    assert len(buffer) == 1
