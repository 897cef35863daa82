"""Context-manager support for objects whose cleanup is ``close()``."""

from __future__ import annotations

from typing import TypeVar

from typing_extensions import Self

T = TypeVar("T", bound="ClosesOnExit")


class ClosesOnExit:
    """Leaving ``with`` always calls ``close()``, whether the body finished, raised or was interrupted."""

    def close(self) -> object:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
