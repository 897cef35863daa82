"""What one sink session delivered and lost, and why: the source of its SinkReport."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from avatarstream.publish.runner import MAX_ERRORS_KEPT
from avatarstream.publish.sink import SinkReport

log = logging.getLogger(__name__)


@dataclass
class Tally:
    """Counts kept by the upload thread; read by the caller only after that thread has ended."""

    delivered: int = 0
    dropped: int = 0
    retries: int = 0
    errors: list[str] = field(default_factory=list)
    errors_not_kept: int = 0
    last_failure: str | None = None  # why the latest connection failed, to explain later losses

    def error(self, message: str) -> None:
        log.warning("kvs: %s", message)
        if len(self.errors) < MAX_ERRORS_KEPT:
            self.errors.append(message)
        else:
            self.errors_not_kept += 1

    def failure(self, message: str) -> None:
        """A connection failed and will be retried: logged, and remembered in case data is lost."""
        log.warning("kvs: %s", message)
        self.last_failure = message

    def report(self, name: str, dropped_elsewhere: int = 0) -> SinkReport:
        errors = list(self.errors)
        dropped = self.dropped + dropped_elsewhere
        if dropped and self.last_failure:
            errors.append(f"{dropped} packets not delivered; last failure: {self.last_failure}")
        if self.errors_not_kept:
            errors.append(f"... and {self.errors_not_kept} more errors")
        return SinkReport(name, self.delivered, dropped, self.retries, errors)
