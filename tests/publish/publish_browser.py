"""Debian's Chromium driven by Playwright, headless, with a fresh profile and no network chatter."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from publish_needs import CHROMIUM, require_chromium

FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--autoplay-policy=no-user-gesture-required",
]


@contextmanager
def chromium_page(profile: Path, args: Sequence[str] = ()) -> Iterator[object]:
    """A page in headless /usr/bin/chromium (Playwright never downloads a browser here); ``args`` adds Chromium flags
    (a fake microphone, say)."""
    require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(str(profile), executable_path=CHROMIUM, headless=True, args=[*FLAGS, *args])
        try:
            yield context.new_page()
        finally:
            context.close()
