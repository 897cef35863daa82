#!/usr/bin/env bash
# Install the Debian packages the publish tests need: GStreamer (x264enc, AAC) and
# what PyGObject builds against, nginx with the RTMP module, and Chromium for the
# live-preview page tests. Idempotent and quick when everything is present: it asks
# apt only for what is missing. Run it before `pip install -e '.[gstreamer]'`
# (PyGObject compiles against libgirepository). Playwright drives /usr/bin/chromium
# and never downloads a browser of its own; hls.js is vendored in the package.
set -euo pipefail

PACKAGES=(
    gstreamer1.0-tools          # gst-launch-1.0 / gst-inspect-1.0
    gstreamer1.0-plugins-base   # rawvideoparse, rawaudioparse, videoconvert, audioconvert
    gstreamer1.0-plugins-good   # fdsrc/fdsink helpers, queue
    gstreamer1.0-plugins-bad    # h264parse, voaacenc fallback
    gstreamer1.0-plugins-ugly   # x264enc
    gstreamer1.0-libav          # avenc_aac
    gir1.2-gstreamer-1.0        # Gst / GstApp typelibs for PyGObject
    gir1.2-gst-plugins-base-1.0
    libgirepository1.0-dev      # PyGObject's build dependencies (pip builds it from source)
    libcairo2-dev
    pkg-config
    gcc
    nginx                       # the RTMP test server ...
    libnginx-mod-rtmp           # ... and its RTMP module
    chromium                    # headless browser for the preview page tests
    espeak-ng                   # speech for the demo family's training data, eval and tests
)

missing=()
for pkg in "${PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q '^install ok installed$'; then
        missing+=("$pkg")
    fi
done

if ((${#missing[@]})); then
    SUDO=""
    if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
    echo "system-deps: installing ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    # Debian enables and starts nginx on install; the tests start their own on a free port.
    if command -v systemctl >/dev/null && systemctl is-active --quiet nginx 2>/dev/null; then
        $SUDO systemctl stop nginx || true
    fi
fi
echo "system-deps: ok"
