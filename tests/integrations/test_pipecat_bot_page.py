"""examples/pipecat_bot.py as the README runs it: its page in headless Chromium shows the avatar speaking."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from avatarstream.benchmarks.local_server import free_port
from publish_browser import chromium_page

ROOT = Path(__file__).parents[2]
SHOWN = """() => {
  const video = document.getElementById("avatar");
  if (!video.videoWidth) return null;
  const canvas = document.createElement("canvas");
  canvas.width = video.videoWidth; canvas.height = video.videoHeight;
  const ctx = canvas.getContext("2d");
  ctx.drawImage(video, 0, 0);
  const pixels = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
  let sum = 0, squares = 0;
  for (let i = 0; i < pixels.length; i += 4) { sum += pixels[i + 1]; squares += pixels[i + 1] * pixels[i + 1]; }
  const n = pixels.length / 4;
  return {time: video.currentTime, width: video.videoWidth, spread: Math.sqrt(squares / n - (sum / n) ** 2)};
}"""
AUDIO_ENERGY = """async () => {
  let energy = 0;
  (await window.botPeer.getStats()).forEach((r) => { if (r.type === "inbound-rtp" && r.kind === "audio") energy = r.totalAudioEnergy || 0; });
  return energy;
}"""


def test_the_page_shows_the_avatar_speaking(tmp_path: Path) -> None:
    port = free_port()
    bot = subprocess.Popen(
        [sys.executable, str(ROOT / "examples" / "pipecat_bot.py"), "--port", str(port), "--device", "cpu"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}/"
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(url, timeout=2).read()
                break
            except OSError:
                assert bot.poll() is None and time.monotonic() < deadline, "the bot did not start"
                time.sleep(0.3)
        with chromium_page(tmp_path / "profile") as page:
            failed: list[str] = []  # every answer over 400 (a favicon the page does not have, say) and every console error
            page.on("response", lambda r: r.status >= 400 and failed.append(f"{r.status} {r.url}"))
            page.on("console", lambda m: m.type == "error" and failed.append(f"console: {m.text}"))
            page.goto(url)
            page.click("#connect")
            page.wait_for_function("document.getElementById('avatar').currentTime > 1.5", timeout=60_000)
            quiet = page.evaluate(AUDIO_ENERGY)
            time.sleep(2.5)  # the greeting is under way
            shown = page.evaluate(SHOWN)
            energy = page.evaluate(AUDIO_ENERGY)
            page.screenshot(path=str(tmp_path / "page.png"))
            print(f"\npage: {shown}, audio energy {quiet:.4f} -> {energy:.4f}; screenshot {tmp_path / 'page.png'}")
    finally:
        bot.terminate()
        bot.wait(30)
    assert shown is not None and shown["width"] >= 64 and shown["spread"] > 10  # a picture of the avatar, not a blank
    assert energy > quiet  # and it speaks: the sound's energy grows while the greeting plays
    assert failed == [], failed
