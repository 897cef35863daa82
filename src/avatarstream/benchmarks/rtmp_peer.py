"""An RTMP receiver that misbehaves on a schedule, for the soak: healthy, then gone, then stuck, then healthy again.

Run as ``python -m avatarstream.benchmarks.rtmp_peer PORT HEALTHY_S STUCK_S``.
Each cycle it accepts one publisher with FFmpeg's own RTMP server (PyAV,
``listen``) and reads it for ``HEALTHY_S``; then drops the connection; then
accepts the publisher's next connection on a plain socket and never answers
its handshake for ``STUCK_S`` (a peer that hangs); then starts over. It prints
one JSON line per phase, so the soak can see that every healthy phase after a
stall received packets again (the sink recovered).
"""

from __future__ import annotations

import json
import socket
import sys
import time

import av

LISTEN_TIMEOUT_S = 30  # a publisher reconnects within its backoff (at most 10 s)


def _say(**fields: object) -> None:
    print(json.dumps({"at": time.time(), **fields}), flush=True)


def _healthy(port: int, seconds: float) -> None:
    """Receive one publisher for ``seconds``; count what arrives."""
    try:
        container = av.open(f"rtmp://127.0.0.1:{port}/live/soak", format="flv", options={"listen": "1", "timeout": str(LISTEN_TIMEOUT_S)})
    except av.error.FFmpegError as err:
        _say(phase="healthy", packets=0, error=f"no publisher: {err}")
        return
    packets = 0
    end = time.monotonic() + seconds
    try:
        for packet in container.demux():
            packets += packet.size > 0
            if time.monotonic() > end:
                break
    except av.error.FFmpegError as err:  # the publisher went away early (the server restarted it): still counted
        _say(phase="healthy", packets=packets, error=str(err))
        return
    finally:
        container.close()
    _say(phase="healthy", packets=packets)


def _stuck(port: int, seconds: float) -> None:
    """Accept the publisher's next connection and say nothing for ``seconds``."""
    with socket.create_server(("127.0.0.1", port), reuse_port=False) as server:
        server.settimeout(LISTEN_TIMEOUT_S)
        try:
            peer, _ = server.accept()
        except TimeoutError:
            _say(phase="stuck", accepted=False)
            return
        with peer:
            time.sleep(seconds)
    _say(phase="stuck", accepted=True, seconds=seconds)


def main(argv: list[str]) -> None:
    port, healthy_s, stuck_s = int(argv[0]), float(argv[1]), float(argv[2])
    while True:
        _healthy(port, healthy_s)
        _stuck(port, stuck_s)


if __name__ == "__main__":
    main(sys.argv[1:])
