"""The ingress's sessions: admission, where each session lives, its speech in, its events out, and resuming it when its
replica is lost."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import logging
import shutil
import tempfile
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np
import ray.exceptions
from starlette.responses import StreamingResponse

from avatarstream.fleet.metrics import FleetMetrics
from avatarstream.fleet.replica_link import ReplicaLink, auth_headers, call, forward
from avatarstream.fleet.resend import resend
from avatarstream.fleet.settings import FleetSettings
from avatarstream.fleet.slot import OpenRequest, SlotReport
from avatarstream.fleet.speech import SpeechLog
from avatarstream.serve.audio_input import RATE, ClipSegment
from avatarstream.serve.auth import TokenCheck
from avatarstream.serve.logs import event
from avatarstream.serve.problems import Busy, NotFound, ServeError, ending
from avatarstream.serve.session import EVENT_QUEUE, SavedSession
from avatarstream.serve.session_ids import new_session_id

ROUTES = {"live": "sessions", "batch": "jobs"}  # where each mode lives in the HTTP API, on the fleet and on a replica
MAX_ENDED = 1000  # ended sessions' last JSON kept, oldest forgotten first
PIECE = RATE // 10  # an encoded clip goes to the replica in pieces of 100 ms
LOST_CLOSE = 1012  # "service restart": the client reconnects to the same session, which resumes elsewhere
Item = np.ndarray | ClipSegment  # speech waiting at the ingress, in the order it came


@dataclasses.dataclass
class Ended:
    """A session or job that ended: its last JSON, and its own URL on the replica that held it last (its MP4 stays there)."""

    info: dict[str, Any]
    url: str


@dataclasses.dataclass
class Close:
    """Tells a client's socket to close with this code (its session goes on)."""

    code: int
    reason: str


class FleetSession:
    """One session as the ingress knows it. ``link`` reaches the replica that holds it now."""

    def __init__(self, fid: str, request: OpenRequest, report: SlotReport, link: ReplicaLink, folder: Path) -> None:
        self.id = fid
        self.log_id = hashlib.sha256(fid.encode()).hexdigest()[:10]
        self.request = request
        self.folder = folder  # encoded clips wait here while they are decoded
        self.state = "running"
        self.error: str | None = None
        self.saved: SavedSession | None = None
        self.speech = SpeechLog()
        self.feed: asyncio.Queue[Item] = asyncio.Queue(maxsize=64)
        self.attached = asyncio.Event()  # a replica is reachable (cleared while resuming)
        self.resent = asyncio.Event()  # cleared from a loss until the new replica has the lost one's unspoken speech: new speech waits
        self.resent.set()
        self.gone = asyncio.Event()  # the session ended here (closed, failed, or it could not resume): nothing waits on it
        self.resending: asyncio.Task[None] | None = None
        self.ending = False  # POST /end: no more speech is taken; the replica speaks what it has, then closes
        self.listeners: set[asyncio.Queue[dict[str, Any] | Close]] = set()
        self.sockets = 0
        self.last_active = time.monotonic()
        self.resumes = 0
        self.resumed_from: int | None = None  # the frame the last resume went on from
        self.received = 0  # streamed speech samples the ingress took from the clients (a client resends from here after a 1012)
        self.tasks: list[asyncio.Task[None]] = []
        self.ttff_seen = False
        self.frames_seen = 0
        self.underruns_seen = 0
        self.attach(report, link)

    def attach(self, report: SlotReport, link: ReplicaLink) -> None:
        self.link = link
        self.replica, self.node, self.base_url = report.replica, report.node, report.base_url
        self.info = report.info
        self.speech_done = report.speech_done

    def listen(self) -> asyncio.Queue[dict[str, Any] | Close]:
        queue: asyncio.Queue[dict[str, Any] | Close] = asyncio.Queue(EVENT_QUEUE)
        self.listeners.add(queue)
        return queue

    def unlisten(self, queue: asyncio.Queue[dict[str, Any] | Close]) -> None:
        self.listeners.discard(queue)

    def broadcast(self, message: dict[str, Any] | Close) -> None:
        for queue in self.listeners:
            if queue.full():
                queue.get_nowait()
            queue.put_nowait(message)

    def placement(self) -> dict[str, str]:
        return {"replica": self.replica, "node": self.node, "url": self.base_url}

    def public_info(self, replica_info: dict[str, Any] | None = None) -> dict[str, Any]:
        """The replica's session JSON as the fleet's: the fleet's id and links, where it lives, and its resumes."""
        info = dict(replica_info or self.info)
        local = info["links"]
        base = f"/{ROUTES[self.request.mode]}/{self.id}"
        links = {"self": base}
        if "audio_ws" in local:
            links |= {"audio_ws": f"{base}/audio", "audio_upload": f"{base}/audio", "interrupt": f"{base}/interrupt", "end": f"{base}/end"}
        links |= {name: self.base_url + local[name] for name in ("preview", "hls", "webrtc", "video", "frames_ws") if name in local}
        state = self.state if self.state in ("resuming", "failed") else info["state"]
        return info | {
            "id": self.id,
            "log_id": self.log_id,
            "state": state,
            "error": self.error or info.get("error"),
            "links": links,
            "placement": self.placement(),
            "resumes": self.resumes,
            "resumed_from_frame": self.resumed_from,
            "speech_done_s": round(self.speech_done / RATE, 3),
            "speech_received_s": self.received / RATE,
        }


class Fleet:
    """Every session of the fleet's ingress. ``slots`` is the handle of the SessionSlot deployment."""

    def __init__(self, settings: FleetSettings, slots: Any) -> None:
        self.settings = settings
        self.slots = slots
        self.auth = TokenCheck(settings.serve.token)
        self.sessions: dict[str, FleetSession] = {}
        self.ended: OrderedDict[str, Ended] = OrderedDict()
        self.running = 0  # replicas running now (polled from Serve)
        self.draining = 0
        self.metrics = FleetMetrics(lambda: float(self.busy), lambda: float(max(self.running - self.busy, 0)), lambda: float(self.draining))
        self.work_dir = Path(tempfile.mkdtemp(prefix="avatarstream-fleet-"))
        self._http: aiohttp.ClientSession | None = None
        self._loops: list[asyncio.Task[None]] = []

    @property
    def busy(self) -> int:
        return sum(1 for s in self.sessions.values() if s.state == "running")

    @property
    def http(self) -> aiohttp.ClientSession:
        if self._http is None:
            self._http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30, sock_connect=5))
        return self._http

    # -- life of the ingress ---------------------------------------------------------------------------

    async def start(self) -> None:
        await self._count_replicas()
        self._loops = [asyncio.create_task(self._every(1.0, self._count_replicas)), asyncio.create_task(self._every(1.0, self._reap))]

    async def close_all(self) -> int:
        """Close every session and job (the fleet is stopping): their clients are told, their files finalized. How many."""
        running = list(self.sessions.items())
        await asyncio.gather(*(self.close(fid, s.request.mode) for fid, s in running), return_exceptions=True)
        return len(running)

    async def shutdown(self) -> None:
        for task in self._loops:
            task.cancel()
        await self.close_all()
        if self._http is not None:
            await self._http.close()
        shutil.rmtree(self.work_dir, ignore_errors=True)

    async def _every(self, seconds: float, work: Any) -> None:
        while True:
            await asyncio.sleep(seconds)
            try:
                await work()
            except Exception:
                logging.getLogger(__name__).exception("fleet housekeeping failed")

    async def _count_replicas(self) -> None:
        """Replicas running and stopping, from Serve's controller (what admission and the slot metrics use)."""
        from ray import serve

        status = await asyncio.to_thread(serve.status)
        app = status.applications.get(self.settings.app_name)
        deployment = app.deployments.get("SessionSlot") if app is not None else None
        states = {str(getattr(state, "value", state)): count for state, count in (deployment.replica_states if deployment is not None else {}).items()}
        self.running, self.draining = states.get("RUNNING", 0), states.get("STOPPING", 0)

    async def _reap(self) -> None:
        """Close sessions nobody has touched for the idle timeout (the replica cannot tell: the ingress's socket is always there)."""
        now = time.monotonic()
        for session in list(self.sessions.values()):
            if (
                session.request.mode == "live"
                and session.state == "running"
                and session.sockets == 0
                and now - session.last_active > self.settings.serve.idle_timeout_s
            ):
                event("session idle", session=session.log_id, idle_timeout_s=self.settings.serve.idle_timeout_s)
                await self.close_if_running(session.id)

    # -- sessions ----------------------------------------------------------------------------------------

    async def open(self, request: OpenRequest) -> FleetSession:
        """Admit the session on a free slot (503 when there is none), link its replica and follow it."""
        start = time.monotonic()
        report, reports = await self._place(request)
        fid = new_session_id()
        folder = Path(tempfile.mkdtemp(prefix="session-", dir=self.work_dir))
        live = request.mode == "live"
        try:
            link = await self._link(report, request.mode)
        except Exception:
            reports.cancel()
            shutil.rmtree(folder, ignore_errors=True)
            raise
        session = FleetSession(fid, request, report, link, folder)
        self.sessions[fid] = session
        session.attached.set()
        session.tasks = [asyncio.create_task(self._follow(session, reports)), *([asyncio.create_task(self._feed(session))] if live else [])]
        self.metrics.started.inc()
        event("session opened", session=session.log_id, replica=report.replica, node=report.node, ms=round((time.monotonic() - start) * 1000, 1))
        return session

    def get(self, fid: str, mode: str = "live") -> FleetSession:
        """A running session (or job, ``mode="batch"``): ids of one kind open nothing else, as on the single server."""
        session = self.sessions.get(fid)
        if session is None or session.request.mode != mode:
            raise NotFound(f"no such {'session' if mode == 'live' else 'job'}; it may have ended, timed out or never existed")
        session.last_active = time.monotonic()
        return session

    def _ended_one(self, fid: str, mode: str) -> Ended | None:
        found = self.ended.get(fid)
        return found if found is not None and found.info["mode"] == mode else None

    async def info(self, fid: str, mode: str = "live") -> dict[str, Any]:
        """The session's JSON, its figures fresh from its replica (the last known ones while it resumes)."""
        if (ended := self._ended_one(fid, mode)) is not None:
            return ended.info
        session = self.get(fid, mode)
        if session.state != "running":
            return session.public_info()
        with contextlib.suppress(ServeError):  # a replica that does not answer (gone, and not yet noticed): the last figures
            session.info = await session.link.request("GET")
        return session.public_info()

    async def close(self, fid: str, mode: str = "live") -> dict[str, Any]:
        """Close a running session (its final JSON and MP4 stay for a while); forget an ended one, and its MP4 on its replica.
        A job is forgotten at once, as on the single server."""
        if (ended := self._ended_one(fid, mode)) is not None:
            del self.ended[fid]
            with contextlib.suppress(ServeError):  # a replica that is gone took the files with it
                await call(self.http, "DELETE", ended.url, auth_headers(self.settings.serve.token))
            return ended.info
        session = self.get(fid, mode)
        ended_there = False
        if session.state == "running":
            with contextlib.suppress(ServeError):  # its replica is gone, and not yet noticed
                await session.link.request("DELETE")  # the replica ends it; its slot reports the end, which ends the follower
                ended_there = True
        if not ended_there:  # resuming, or its replica is gone: stop following it here
            session.state = "closed"
            for task in session.tasks:
                task.cancel()
        await asyncio.wait(session.tasks[:1])
        final = self.ended.pop(fid, None) if mode == "batch" else self.ended.get(fid)  # the replica forgot the job on DELETE
        return final.info if final is not None else session.public_info()

    def where(self, fid: str, mode: str = "live") -> str:
        """The session's (or job's) own URL on the replica that holds it, or held it last; 503 while it resumes elsewhere."""
        if (ended := self._ended_one(fid, mode)) is not None:
            return ended.url
        session = self.get(fid, mode)
        if session.state != "running" or not session.attached.is_set():
            raise Busy("the session is resuming on another replica; try again shortly", {"Retry-After": "1"})
        return session.link.url

    async def ask(self, fid: str, mode: str, method: str, path: str, body: Any = None) -> dict[str, Any]:
        """A JSON call forwarded to the session's (or job's) own API on its replica (``path`` after its id)."""
        return await call(self.http, method, self.where(fid, mode) + path, auth_headers(self.settings.serve.token), body)

    async def forward(self, fid: str, mode: str, path: str, asked: Any) -> StreamingResponse:
        """A GET of the session's video routes (``path`` after its id), proxied to its replica: what the replica answers."""
        return await forward(self.http, self.where(fid, mode) + path, auth_headers(self.settings.serve.token), asked)

    async def close_if_running(self, fid: str) -> None:
        if fid in self.sessions:
            with contextlib.suppress(NotFound):
                await self.close(fid)

    def check_takes_speech(self, session: FleetSession) -> None:
        """Refuse speech once the session is ending (as the single server does)."""
        if session.ending:
            raise ending()

    async def end(self, session: FleetSession) -> dict[str, Any]:
        """Take no more speech, hand what the ingress holds to the replica, then end it there after its queue."""
        session.ending = True
        handed_on = asyncio.ensure_future(self._handed_on(session))
        gone = asyncio.ensure_future(session.gone.wait())
        try:
            await asyncio.wait([handed_on, gone], return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone.cancel()
        if not handed_on.done():  # it failed or closed meanwhile (a resume that found no slot, say)
            handed_on.cancel()
            raise NotFound(f"the session ended ({session.state}) before it could end after its speech")
        ending: dict[str, Any] = await session.link.request("POST", "/end")
        return ending | {"id": session.id}

    @staticmethod
    async def _handed_on(session: FleetSession) -> None:
        """Every piece of speech taken so far is on the replica that holds the session now."""
        await session.feed.join()
        await session.attached.wait()
        await session.resent.wait()

    async def interrupt(self, session: FleetSession) -> dict[str, Any]:
        """Drop the speech waiting here and at the replica; what the replica already handed to the model still plays."""
        while not session.feed.empty():
            item = session.feed.get_nowait()
            if isinstance(item, ClipSegment):
                item.close()
            session.feed.task_done()
        session.speech.drop_all()
        return await session.link.request("POST", "/interrupt")

    # -- inside --------------------------------------------------------------------------------------------

    async def _place(self, request: OpenRequest, *, client: bool = True) -> tuple[SlotReport, Any]:
        """A free slot's first report for this request; Busy (503) when every slot is taken. ``client``: a client asked,
        so a refusal is counted and logged (a resume that waits for a slot asks again and again, uncounted)."""
        if self.busy >= self.running:
            await self._count_replicas()  # the polled count may be a second old: refuse only on a fresh one
            if self.busy >= self.running:
                raise self._busy(client)
        reports = self.slots.options(stream=True).open.remote(request)
        try:
            report = await asyncio.wait_for(reports.__anext__(), self.settings.admission_wait_s)
        except TimeoutError:
            reports.cancel()
            raise self._busy(client) from None
        except asyncio.CancelledError:  # a resume that ran out of time: the slot must not keep a session nobody follows
            reports.cancel()
            raise
        except ray.exceptions.RayTaskError as err:
            raise _cause(err) from None
        return report, reports

    async def _link(self, report: SlotReport, mode: str) -> ReplicaLink:
        """The connection to the replica that just took a session (a job's audio came with it: it has no socket)."""
        link = ReplicaLink(self.http, report.base_url, report.info["id"], self.settings.serve.token, ROUTES[mode])
        if mode == "live":
            await link.connect()
        return link

    def _fail(self, session: FleetSession, message: str) -> None:
        session.state, session.error = "failed", message
        self.metrics.failed.inc()

    def _busy(self, counted: bool = True) -> Busy:
        if counted:
            self.metrics.rejected.inc()
            event("session refused", reason="full", replicas=self.running)
        return Busy(
            f"every session slot of the fleet is busy ({self.running} replicas running); try again shortly",
            {"Retry-After": str(self.settings.serve.retry_after_s)},
        )

    async def _follow(self, session: FleetSession, reports: Any) -> None:
        """Apply the replica's reports until the session ends; when the replica is lost, resume the session elsewhere."""
        live = session.request.mode == "live"
        events = asyncio.create_task(self._relay(session) if live else asyncio.sleep(0))
        try:
            while True:
                try:
                    async for report in reports:
                        self._apply(session, report)
                    break
                except ray.exceptions.RayTaskError as err:
                    self._fail(session, f"the replica failed: {_cause(err)}")
                    break
                except ray.exceptions.RayError as err:  # the replica's actor or node died
                    events.cancel()
                    if not live:  # a job has no state saved along the way: it is submitted again
                        self._fail(session, f"its replica was lost ({type(err).__name__}); submit the job again")
                        break
                    reports = await self._resume(session, err)
                    if reports is None:
                        break
                    events = asyncio.create_task(self._relay(session))
        finally:
            events.cancel()
            with contextlib.suppress(Exception):
                reports.cancel()  # a follower stopped here (close while resuming, shutdown) ends the slot's request: its session closes
            await self._ended(session)

    def _apply(self, session: FleetSession, report: SlotReport) -> None:
        session.info, session.speech_done = report.info, report.speech_done
        if report.saved is not None:
            saved = report.saved
            if not saved.state.values and session.saved is not None:  # the init outputs travel once
                saved = dataclasses.replace(saved, state=dataclasses.replace(saved.state, values=session.saved.state.values))
            session.saved = saved
            session.speech.done_until(saved.speech_done)
        stats = report.info["stats"]
        if stats["ttff_s"] is not None and not session.ttff_seen:
            session.ttff_seen = True
            self.metrics.ttff.observe(stats["ttff_s"])
        new_frames = max(stats["frames"] - session.frames_seen, 0)
        session.frames_seen = max(session.frames_seen, stats["frames"])
        self.metrics.frames.inc(new_frames)
        self.metrics.frame_rate.add(new_frames)
        self.metrics.underruns.inc(max(stats["underruns"] - session.underruns_seen, 0))
        session.underruns_seen = stats["underruns"]

    async def _relay(self, session: FleetSession) -> None:
        """The replica's socket events to every client socket of the session."""
        with contextlib.suppress(aiohttp.ClientError, OSError):
            async for message in session.link.events():
                if message.get("type") != "closed":  # the fleet says when a session ends: a lost replica's session goes on
                    session.broadcast(message)

    async def _feed(self, session: FleetSession) -> None:
        """Speech from the clients, in order, to the replica; each piece is logged first, so a resume can send it again."""
        while True:
            item = await session.feed.get()
            try:
                if isinstance(item, ClipSegment):
                    try:
                        while (piece := await asyncio.to_thread(item.read, PIECE)).size:
                            await self._forward(session, piece)
                    finally:
                        item.close()
                else:
                    await self._forward(session, item)
            finally:
                session.feed.task_done()

    async def _forward(self, session: FleetSession, samples: np.ndarray) -> None:
        await session.attached.wait()
        await session.resent.wait()  # after a resume, what the lost replica had not spoken goes first
        session.speech.add(samples)
        with contextlib.suppress(aiohttp.ClientError, OSError, ConnectionError):  # the replica is gone: the resume sends it again
            await session.link.send(samples)

    async def _resume(self, session: FleetSession, err: BaseException) -> Any:
        """Carry the session on on a free slot from its last saved state (its clients' sockets close with 1012 and reconnect),
        or fail it, within the resume timeout. The speech to send again follows while it runs (``_resend``)."""
        lost_at = time.monotonic()
        session.state = "resuming"
        session.attached.clear()
        session.resent.clear()
        if session.resending is not None:  # lost again while sending again: the next replica is sent it from its state
            session.resending.cancel()
        self.metrics.lost.inc()
        event("replica lost", logging.WARNING, session=session.log_id, replica=session.replica, node=session.node, error=type(err).__name__)
        await session.link.aclose()
        session.broadcast(Close(LOST_CLOSE, "the session's replica was lost; it resumes on another: reconnect to this session"))
        timeout = self.settings.resume_timeout_s
        try:
            async with asyncio.timeout(timeout):
                reports = await self._reattach(session)
        except Exception as failure:  # noqa: BLE001 - however a resume goes wrong, the session fails with the reason, never half-resumed
            why = f"no replica took it within {timeout:.0f} s" if type(failure) is TimeoutError else str(failure) or type(failure).__name__
            self._fail(session, f"its replica was lost and it could not resume: {why}")
            return None
        position = session.saved.speech_done if session.saved is not None else 0
        session.resending = asyncio.create_task(self._resend(session, position))
        session.resumes += 1
        session.resumed_from = session.saved.state.published_frames if session.saved is not None else 0
        session.state = "running"
        session.attached.set()
        seconds = time.monotonic() - lost_at
        self.metrics.resumed.inc()
        self.metrics.resume_seconds.observe(seconds)
        resend_s = (session.speech.end - max(position, session.speech.start)) / RATE
        event("session resumed", session=session.log_id, replica=session.replica, node=session.node, seconds=round(seconds, 3), resend_s=resend_s)
        return reports

    async def _reattach(self, session: FleetSession) -> Any:
        """Open the session from its saved state on a free slot (waiting while none is) and link it there: its reports."""
        request = dataclasses.replace(session.request, resume=session.saved)
        while True:
            try:
                report, reports = await self._place(request, client=False)
                break
            except Busy:
                await asyncio.sleep(0.5)
        try:
            session.attach(report, await self._link(report, session.request.mode))
        except BaseException:  # its slot is let go, not left holding a session nobody follows
            reports.cancel()
            raise
        return reports

    async def _resend(self, session: FleetSession, position: int) -> None:
        """What the lost replica had not spoken, to the new one in pieces its queue takes (then its end, if it was ending);
        the clients' new speech waits until then, so the order holds."""
        try:
            sent = await resend(session.speech, position, session.link)
            if session.ending:  # it was ending on the lost replica: the new one ends after the speech sent again
                await session.link.request("POST", "/end")
        except (aiohttp.ClientError, OSError, ServeError):  # this replica is lost too: the next resume sends it again
            return
        session.resent.set()
        event("speech sent again", session=session.log_id, seconds=round(sent / RATE, 3))

    async def _ended(self, session: FleetSession) -> None:
        """Forget a session that ended: keep its last JSON, tell and close its clients' sockets."""
        session.gone.set()
        for task in [*session.tasks[1:], *([session.resending] if session.resending is not None else [])]:
            task.cancel()
        await session.link.aclose()
        if session.state == "running":
            session.state = session.info["state"] if session.info["state"] != "running" else "closed"
        final = session.public_info() | {"state": session.state}
        self.sessions.pop(session.id, None)
        self.ended[session.id] = Ended(final, session.link.url)
        while len(self.ended) > MAX_ENDED:
            self.ended.popitem(last=False)
        session.broadcast({"type": "closed", "state": session.state})
        session.broadcast(Close(1000, f"the session ended ({session.state})"))
        shutil.rmtree(session.folder, ignore_errors=True)
        event("session ended", session=session.log_id, state=session.state, resumes=session.resumes, frames=session.info["stats"]["frames"])


def _cause(err: ray.exceptions.RayTaskError) -> BaseException:
    """The slot's own exception (an InputError for a bad reference, say), not Ray's wrapper."""
    cause = getattr(err, "cause", None)
    return cause if isinstance(cause, BaseException) else err
