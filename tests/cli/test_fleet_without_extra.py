"""Without the fleet extra, ``avatarstream fleet`` says in one line how to install it (no ModuleNotFoundError traceback)."""

from __future__ import annotations

import subprocess
import sys

HIDE_RAY = "import sys; sys.modules['ray'] = None; from avatarstream.cli.main import main; sys.exit(main(['fleet', '--replicas', '1']))"


def test_fleet_without_ray_names_the_extra() -> None:
    result = subprocess.run([sys.executable, "-c", HIDE_RAY], check=False, capture_output=True, text=True, timeout=120)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1 and lines[0].startswith("error: the fleet needs Ray Serve") and "pip install 'avatarstream[fleet]'" in lines[0], result.stderr
