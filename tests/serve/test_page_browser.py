"""The page at / in headless Chromium: start a demo session, upload speech, watch the avatar play it live, and never
ask for a file that is not there yet (the playlist appears with its first segment: the page waits for the session's
stats.hls_ready instead of collecting 404s)."""

from __future__ import annotations

import sys
from pathlib import Path

from serve_harness import running_server, speech, wav_bytes

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "publish"))  # the publish tests' browser launcher
from publish_browser import chromium_page


def test_page_plays_a_session_that_speaks_an_upload(tmp_path) -> None:
    clip = tmp_path / "hello.wav"
    clip.write_bytes(wav_bytes(speech(4.0)))
    with running_server(tmp_path) as base, chromium_page(tmp_path / "profile") as page:
        failed: list[str] = []  # every answer over 400 and every console error, until the session is closed
        page.on("response", lambda r: r.status >= 400 and failed.append(f"{r.status} {r.url}"))
        page.on("console", lambda m: m.type == "error" and failed.append(f"console: {m.text}"))
        page.goto(base + "/")
        page.click("#start")
        page.wait_for_function("window.avatarPage.sessionId !== null", timeout=20000)
        page.wait_for_function("window.avatarPage.playedFrames > 10", timeout=30000)  # idle video plays before any speech
        page.set_input_files("#file", str(clip))
        page.click("#speak")
        page.wait_for_function("window.avatarPage.info && window.avatarPage.info.stats.speaking", timeout=20000)
        played = page.evaluate("window.avatarPage.playedFrames")
        page.wait_for_function(f"window.avatarPage.playedFrames > {played + 20}", timeout=15000)  # still playing
        state = page.evaluate("({...window.avatarPage, video: document.getElementById('video').currentTime})")
        print(f"\npage: ttff {state['info']['stats']['ttff_s']} s, played {state['playedFrames']} frames, video at {state['video']:.2f} s")
        assert state["error"] is None
        assert page.inner_text("#speaking") in ("yes", "no (idle)")
        sid = state["sessionId"]
        assert failed == [], failed
        page.click("#close")
        page.wait_for_function("window.avatarPage.sessionId === null", timeout=10000)
        import httpx

        assert httpx.get(f"{base}/sessions/{sid}").json()["state"] == "closed"
