"""/docs renders in a real browser with every request outside the server refused: no CDN."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import httpx
from serve_harness import running_server

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "publish"))  # the publish tests' browser launcher
from publish_browser import chromium_page


def test_docs_page_loads_only_from_the_server(tmp_path: Path) -> None:
    with running_server(tmp_path) as base:
        html = httpx.get(base + "/docs").text
        assets = re.findall(r'(?:src|href)="([^"]+)"', html)
        assert assets and all(a.startswith("/") for a in assets), assets
        assert all(httpx.get(base + a).status_code == 200 for a in assets)
        assert httpx.get(base + "/redoc").status_code == 404  # it would need a CDN
        assert httpx.get(base + "/docs-assets/../app.py").status_code == 404

        outside: list[str] = []
        with chromium_page(tmp_path / "profile") as page:

            def only_local(route) -> None:  # type: ignore[no-untyped-def]
                if route.request.url.startswith(base):
                    route.continue_()
                else:
                    outside.append(route.request.url)
                    route.abort()

            page.route("**/*", only_local)
            page.goto(base + "/docs")
            page.wait_for_selector(".swagger-ui .info .title", timeout=20000)
            assert "avatarstream" in page.inner_text(".swagger-ui .info .title")
            page.wait_for_selector(".opblock", timeout=10000)
            paths = page.eval_on_selector_all(".opblock-summary-path", "nodes => nodes.map(n => n.getAttribute('data-path'))")
            assert "/sessions/{sid}/audio" in paths and "/jobs" in paths
        assert outside == []
