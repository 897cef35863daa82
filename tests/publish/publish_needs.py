"""Skip a test only where a system dependency is missing and the setup script was not run.

CI runs scripts/system-deps.sh first and sets CI=true: there a missing
dependency is a failure, never a skip.
"""

from __future__ import annotations

import os
import shutil

import pytest

from avatarstream.publish.encoders.gstreamer import gstreamer_missing

CHROMIUM = "/usr/bin/chromium"
NGINX = "/usr/sbin/nginx"
RTMP_MODULE = "/usr/lib/nginx/modules/ngx_rtmp_module.so"


def require(missing: str | None) -> None:
    if missing is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"{missing}; CI runs scripts/system-deps.sh, so it must be there")
    pytest.skip(f"{missing}; run scripts/system-deps.sh")


def require_gstreamer() -> None:
    require(gstreamer_missing())


def require_chromium() -> None:
    try:
        import playwright  # noqa: F401
    except ImportError:
        require("playwright is not installed (pip install -e '.[dev]')")
    require(None if os.path.exists(CHROMIUM) else f"{CHROMIUM} is not installed")


def require_nginx_rtmp() -> None:
    have = shutil.which(NGINX) or os.path.exists(NGINX)
    require(None if have and os.path.exists(RTMP_MODULE) else "nginx with libnginx-mod-rtmp is not installed")
