# Sourced by the GPU scripts (bench/gpu_all.sh, bench/infinitetalk_gpu.sh): sets PYTHON to an interpreter with a torch that
# sees a GPU and every package in NEEDS. When the given one ($PYTHON, default .venv/bin/python, else python3) lacks them,
# they go into a venv ($VENV, default /tmp/avatarstream-gpu-venv) that sees python3's own packages (its CUDA torch);
# with a folder .whl/ of wheels in the repository root (bench/fetch_gpu_wheels.sh), they are installed from there, offline.
NEEDS=("diffusers==0.42.1" "transformers>=5.24,<6" "accelerate>=1.10" "av>=14" "ftfy>=6.1" "pyloudnorm>=0.2" "psutil>=5.9" "safetensors>=0.4")

ready() {  # does interpreter $1 have a torch that sees a GPU and every package in NEEDS?
  "$1" - "${NEEDS[@]}" <<'PY' 2>/dev/null
import sys
from importlib.metadata import PackageNotFoundError, version

import torch
from packaging.requirements import Requirement


def satisfied(spec: str) -> bool:
    req = Requirement(spec)
    try:
        return req.specifier.contains(version(req.name), prereleases=True)
    except PackageNotFoundError:
        return False


sys.exit(0 if torch.cuda.is_available() and all(satisfied(s) for s in sys.argv[1:]) else 1)
PY
}

make_venv() {  # a venv at $2 that sees $1's packages, even where $1 is itself a venv (as the GPU image's python3 is)
  "$1" -m venv --system-site-packages --without-pip "$2"
  local site
  site=$("$2/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  "$1" -c 'import site; print("\n".join(site.getsitepackages()))' >"$site/base-packages.pth"
}

PYTHON=${PYTHON:-.venv/bin/python}
[ -x "$PYTHON" ] || PYTHON=python3
if ! ready "$PYTHON"; then
  VENV=${VENV:-/tmp/avatarstream-gpu-venv}
  [ -x "$VENV/bin/python" ] || make_venv python3 "$VENV"
  PYTHON=$VENV/bin/python
  if ! ready "$PYTHON"; then
    FROM=()
    [ -d .whl ] && FROM=(--no-index --find-links .whl)
    "$PYTHON" -m pip install --quiet --disable-pip-version-check "${FROM[@]}" "${NEEDS[@]}"
  fi
fi

