"""The ingress's speech log read again in pieces after a resume (fleet/speech.py): the speech from where the replica's saved
state stands, in order, each piece small enough for the replica's socket, and nothing an interrupt dropped meanwhile."""

from __future__ import annotations

import numpy as np

from avatarstream.fleet.speech import SpeechLog


def logged(sizes: list[int]) -> tuple[SpeechLog, np.ndarray]:
    log, pieces, at = SpeechLog(), [], 0
    for size in sizes:
        pieces.append(np.arange(at, at + size, dtype=np.float32))
        log.add(pieces[-1])
        at += size
    return log, np.concatenate(pieces)


def test_pieces_carry_everything_from_the_position_in_order_and_none_over_the_size() -> None:
    log, everything = logged([7, 3, 12, 1, 9])
    pieces = list(log.pieces(5, 4))
    assert all(0 < p.size <= 4 for p in pieces) and sum(p.size < 4 for p in pieces) == 1, [p.size for p in pieces]
    assert np.array_equal(np.concatenate(pieces), everything[5:])
    assert list(log.pieces(log.end, 4)) == [], "nothing after the end"


def test_a_position_the_log_has_forgotten_reads_from_its_start() -> None:
    log, everything = logged([10, 10])
    log.done_until(12)
    assert np.array_equal(np.concatenate(list(log.pieces(3, 100))), everything[12:])


def test_the_log_trimmed_while_it_is_read_again_keeps_the_rest() -> None:
    log, everything = logged([10, 10, 10])
    pieces = log.pieces(0, 8)
    read = [next(pieces), next(pieces)]
    log.done_until(14)  # the new replica says it spoke some of what it was sent
    read += list(pieces)
    assert np.array_equal(np.concatenate(read), everything)


def test_an_interrupt_while_it_is_read_again_sends_no_more() -> None:
    log, everything = logged([10, 10, 10])
    pieces = log.pieces(0, 8)
    first = next(pieces)
    log.drop_all()
    assert list(pieces) == [] and np.array_equal(first, everything[:8])
