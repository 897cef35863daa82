"""A local web page that plays the stream while it is generated (HLS via hls.js, or WebRTC).

The server is a sink: it is handed every packet, which it forwards to WebRTC
viewers, and it serves the HLS folder that an HlsSink in the same publisher
writes. It starts listening when it is built, so the page can be opened
before the first frame exists; the page waits for the playlist and shows its
own time to first frame and live fps.

Each connection has a thread of its own, for as long as its request takes:
one that sends nothing, or stops reading the answer, is hung up after
``REQUEST_TIMEOUT_S``, so that viewers that stop do not pile up threads and
answers.
"""

from __future__ import annotations

import json
import logging
import mimetypes
import shutil
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import cast

from avatarstream.errors import PublishError
from avatarstream.publish.preview.webrtc_sink import WebRtcSink
from avatarstream.publish.sink import SinkReport
from avatarstream.publish.sinks.hls import PLAYLIST

log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
STATIC = resources.files("avatarstream.publish.preview") / "static"
TYPES = {".m3u8": "application/vnd.apple.mpegurl", ".m4s": "video/iso.segment", ".mp4": "video/mp4", ".js": "text/javascript"}
MAX_OFFER_BYTES = 64 * 1024
REQUEST_TIMEOUT_S = 30.0  # to read a request and to write its answer (a segment: a second or two of video)


class PreviewServer(WebRtcSink):
    """HTTP on ``host:port`` (port 0: any free one): ``/`` the page, ``/hls/`` the HLS folder, ``/offer`` WebRTC,
    ``/status`` whether the playlist is there yet (``{"hls_ready": ...}``, so the page waits without asking for it).

    ``owns_hls_dir``: the folder is the preview's own scratch space (no ``--hls`` was asked for), removed once serving stops.
    """

    def __init__(
        self,
        hls_dir: str | Path,
        host: str = DEFAULT_HOST,
        port: int = DEFAULT_PORT,
        *,
        keep_serving: bool = False,
        owns_hls_dir: bool = False,
        ice_servers: tuple[str, ...] = (),
    ) -> None:
        super().__init__(ice_servers=ice_servers)
        self.keep_serving = keep_serving
        self.owns_hls_dir = owns_hls_dir
        self.hls_dir = Path(hls_dir).resolve()
        try:
            self._http = ThreadingHTTPServer((host, port), _handler(self))
        except OSError as err:
            self.relay.close()
            raise PublishError(f"cannot serve the preview on {host}:{port}: {err.strerror or err}; choose another --preview HOST:PORT") from err
        self._http.daemon_threads = True
        bound_host, self.port = self._http.server_address[:2]
        self.host = cast(str, bound_host)  # typeshed allows bytes; the address of an AF_INET(6) socket always has a str host
        self.name = f"preview:{self.url}"
        self._thread = threading.Thread(target=self._http.serve_forever, name="preview-http", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in str(self.host) else self.host
        return f"http://{host}:{self.port}/"

    def close(self) -> SinkReport:
        """Hang up the WebRTC viewers (the stream has ended); stop serving unless ``keep_serving``."""
        report = super().close()
        if not self.keep_serving:
            self.stop()
        return report

    def stop(self) -> None:
        """Stop serving the page and the HLS folder; safe to call twice."""
        if self._thread.is_alive():
            self._http.shutdown()
            self._thread.join()
        self._http.server_close()
        if self.owns_hls_dir:
            shutil.rmtree(self.hls_dir, ignore_errors=True)


def _handler(server: PreviewServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        timeout = REQUEST_TIMEOUT_S  # on the connection's socket: a read or a whole answer that takes longer fails

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/":
                self._send_static("index.html")
            elif path.startswith("/static/"):
                self._send_static(path.removeprefix("/static/"))
            elif path.startswith("/hls/"):
                self._send_hls(path.removeprefix("/hls/"))
            elif path == "/status":
                self._send(json.dumps({"hls_ready": (server.hls_dir / PLAYLIST).is_file()}).encode(), "application/json")
            else:
                self.send_error(HTTPStatus.NOT_FOUND)

        def do_POST(self) -> None:
            if self.path != "/offer":
                self.send_error(HTTPStatus.NOT_FOUND)
                return
            length = int(self.headers.get("Content-Length") or 0)
            if not 0 < length <= MAX_OFFER_BYTES:
                self.send_error(HTTPStatus.BAD_REQUEST, "expected a JSON offer")
                return
            try:
                offer = json.loads(self.rfile.read(length))
                answer = server.relay.answer(offer["sdp"], offer["type"])
            except (ValueError, KeyError, TypeError) as err:
                self.send_error(HTTPStatus.BAD_REQUEST, f"bad offer: {err}")
                return
            except Exception as err:  # noqa: BLE001 - a failed negotiation must not stop the server
                log.warning("WebRTC negotiation failed: %s", err)
                self.send_error(HTTPStatus.INTERNAL_SERVER_ERROR, "WebRTC negotiation failed")
                return
            self._send(json.dumps({"sdp": answer.sdp, "type": answer.type}).encode(), "application/json")

        def _send_static(self, name: str) -> None:
            resource = STATIC / name
            if "/" in name or not resource.is_file():
                self.send_error(HTTPStatus.NOT_FOUND)
                return
            self._send(resource.read_bytes(), _type(name))

        def _send_hls(self, name: str) -> None:
            path = (server.hls_dir / name).resolve()
            if path.parent != server.hls_dir or not path.is_file():
                self.send_error(HTTPStatus.NOT_FOUND)  # not written yet, or outside the folder
                return
            try:
                body = path.read_bytes()
            except FileNotFoundError:  # a sliding window deleted it just now
                self.send_error(HTTPStatus.NOT_FOUND)
                return
            self._send(body, _type(name))

        def _send(self, body: bytes, content_type: str) -> None:
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            try:
                self.end_headers()
                self.wfile.write(body)
            except OSError as err:  # the viewer left, or took nothing for the timeout
                log.debug("preview: %s: answer not delivered: %s", self.path, err)
                self.close_connection = True

        def log_message(self, format: str, *args: object) -> None:
            log.debug("preview: " + format, *args)

    return Handler


def _type(name: str) -> str:
    suffix = Path(name).suffix
    return TYPES.get(suffix) or mimetypes.guess_type(name)[0] or "application/octet-stream"
