// The page at /: open a session, play its HLS stream, speak a file or the microphone into it, end it and download its MP4.
// window.avatarPage holds what the page shows, so a test reads the same numbers a person sees.
"use strict";

const $ = (id) => document.getElementById(id);
const page = (window.avatarPage = { sessionId: null, info: null, playedFrames: 0, micSentS: 0, video: null, error: null });
let hls = null;
let mic = null;
let poller = null;
let ownSession = false;

function fail(message) {
  page.error = message;
  $("error").textContent = message;
}

function clearError() {
  page.error = null;
  $("error").textContent = "";
}

function headers(extra = {}) {
  const token = $("token").value.trim();
  return token ? { ...extra, Authorization: `Bearer ${token}` } : extra;
}

async function api(method, path, body, contentType) {
  const init = { method, headers: headers(contentType ? { "Content-Type": contentType } : {}), body };
  const response = await fetch(path, init);
  const data = response.headers.get("content-type")?.includes("json") ? await response.json() : null;
  if (!response.ok) throw new Error((data && data.detail) || `HTTP ${response.status}`);
  return data;
}

// phase: "idle" (no session), "running", or "ending" (it says what is queued, then closes: no more speech is taken).
function enable(phase) {
  $("start").disabled = $("record").disabled = phase !== "idle";
  $("close").disabled = phase === "idle";
  for (const id of ["end", "file", "speak", "mic", "interrupt"]) $(id).disabled = phase !== "running";
}

function show(info) {
  page.info = info;
  const s = info.stats;
  $("state").textContent = info.state;
  $("ttff").textContent = s.ttff_s === null ? "–" : `${s.ttff_s.toFixed(2)} s`;
  $("speaking").textContent = s.speaking ? "yes" : "no (idle)";
  $("frames").textContent = `${s.frames}`;
  $("fps").textContent = s.fps.toFixed(1);
  $("queued").textContent = `${s.queued_audio_s.toFixed(1)} s`;
  $("underruns").textContent = `${s.underruns}`;
  if (info.state === "ending") {
    stopMic();
    enable("ending");
  } else if (info.state !== "running") {
    stop(`session ${info.state}${info.error ? ": " + info.error : ""}`);
  }
}

// The playlist appears with the first segment, and the session's stats.hls_ready says when: asking for the playlist
// itself before that would be answered 404, which the browser logs as an error every time.
async function waitForPlaylist() {
  for (let id = page.sessionId; id && page.sessionId === id; ) {
    if (page.info && page.info.stats.hls_ready) return true;
    await new Promise((resolve) => setTimeout(resolve, 300));
    try {
      if (page.sessionId === id) show(await api("GET", `/sessions/${id}`));
    } catch (err) { /* the poller reports a session that is gone */ }
  }
  return false;
}

async function play(url) {
  const video = $("video");
  if (!(await waitForPlaylist())) return;
  if (window.Hls && Hls.isSupported()) {
    hls = new Hls({
      liveSyncDurationCount: 2,
      manifestLoadingMaxRetry: 10,
      levelLoadingMaxRetry: 10,
      xhrSetup: (xhr) => { for (const [k, v] of Object.entries(headers())) xhr.setRequestHeader(k, v); },
    });
    hls.on(Hls.Events.ERROR, (_, data) => { if (data.fatal) fail(`video: ${data.type} ${data.details}`); });
    hls.loadSource(url);
    hls.attachMedia(video);
  } else if (video.canPlayType("application/vnd.apple.mpegurl") && !$("token").value) {
    video.src = url; // Safari plays HLS natively (without a token header)
  } else {
    return fail("this browser cannot play HLS");
  }
  video.play().catch(() => {});
}

function countFrames(now, meta) {
  page.playedFrames += 1;
  $("played").textContent = `${page.playedFrames}`;
  $("video").requestVideoFrameCallback(countFrames);
}

async function attach(info) {
  page.sessionId = info.id;
  history.replaceState(null, "", `#session=${info.id}`);
  enable("running");
  show(info);
  poller = setInterval(async () => {
    try { show(await api("GET", `/sessions/${page.sessionId}`)); } catch (err) { stop(String(err.message || err)); }
  }, 1000);
  if (info.links.hls) play(info.links.hls);
  else fail("this session has no HLS output to watch");
}

function stop(message) {
  const id = page.sessionId;
  const recorded = page.info && page.info.outputs.file && page.info.state !== "failed";
  if (poller) clearInterval(poller);
  poller = null;
  stopMic();
  if (hls) hls.destroy();
  hls = null;
  page.sessionId = null;
  ownSession = false;
  enable("idle");
  if (message) $("state").textContent = message;
  if (id && recorded) offerVideo(id);
}

// A link can carry no token, so the MP4 is fetched here (with the token's header) and offered from memory.
async function offerVideo(id) {
  try {
    const response = await fetch(`/sessions/${id}/video.mp4`, { headers: headers() });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    page.video = URL.createObjectURL(await response.blob());
    $("download").href = page.video;
    $("download").classList.remove("hidden");
  } catch (err) { fail(`the recording: ${err.message || err}`); }
}

async function start() {
  clearError();
  try {
    const form = new FormData();
    form.append("identity", "default");
    form.append("outputs", JSON.stringify({ hls: true, file: $("record").checked }));
    if (page.video) URL.revokeObjectURL(page.video);
    page.video = null;
    page.micSentS = 0;
    $("download").classList.add("hidden");
    $("mic-sent").textContent = "–";
    const info = await api("POST", "/sessions", form);
    ownSession = true;
    await attach(info);
  } catch (err) { fail(`could not start: ${err.message || err}`); }
}

async function close() {
  const id = page.sessionId;
  if (hls) hls.destroy();  // first: the player would otherwise ask for the playlist the server is removing
  hls = null;
  if (id) await api("DELETE", `/sessions/${id}`).catch(() => {});  // the server has freed it when this returns
  stop("closed");
}

// The server takes no more speech, says what is queued, then closes the session (the poller sees it end): the
// recording keeps the last words, which Close would drop.
async function end() {
  stopMic();
  try {
    const ending = await api("POST", `/sessions/${page.sessionId}/end`);
    enable("ending");
    $("state").textContent = `ending: ${ending.remaining_s.toFixed(1)} s still to say`;
  } catch (err) { fail(`could not end: ${err.message || err}`); }
}

async function speakFile() {
  const file = $("file").files[0];
  if (!file) return fail("choose an audio file first");
  try {
    await api("POST", `/sessions/${page.sessionId}/audio`, file, file.type || "application/octet-stream");
    clearError();
  } catch (err) { fail(`upload refused: ${err.message || err}`); }
}

// The microphone: an AudioWorklet hands 32-bit float PCM to a WebSocket, in the context's own rate. It gathers the
// 128-sample render quanta into pieces of about 45 ms (the socket takes 20 ms to 1 s a message, docs/api.md).
const WORKLET = `registerProcessor("pcm-tap", class extends AudioWorkletProcessor {
  constructor() { super(); this.piece = new Float32Array(2048); this.filled = 0; }
  process(inputs) {
    const samples = inputs[0][0];
    if (!samples) return true;
    this.piece.set(samples, this.filled);
    this.filled += samples.length;
    if (this.filled + samples.length > this.piece.length) {
      this.port.postMessage(this.piece.slice(0, this.filled));
      this.filled = 0;
    }
    return true;
  }
});`;

async function startMic() {
  const stream = await navigator.mediaDevices.getUserMedia({ audio: { channelCount: 1, echoCancellation: true } });
  const context = new AudioContext();
  await context.audioWorklet.addModule(URL.createObjectURL(new Blob([WORKLET], { type: "text/javascript" })));
  const node = new AudioWorkletNode(context, "pcm-tap");
  context.createMediaStreamSource(stream).connect(node);
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const token = $("token").value.trim();
  const query = new URLSearchParams({ format: "f32le", rate: String(context.sampleRate), channels: "1" });
  if (token) query.set("token", token);
  const ws = new WebSocket(`${scheme}://${location.host}/sessions/${page.sessionId}/audio?${query}`);
  ws.binaryType = "arraybuffer";
  ws.onmessage = (event) => { const msg = JSON.parse(event.data); if (msg.type === "error") fail(msg.message); };
  ws.onclose = () => { if (mic && mic.ws === ws) stopMic(); };  // the session ended, or the server refused the socket
  node.port.onmessage = (event) => {
    if (ws.readyState !== WebSocket.OPEN) return;
    ws.send(event.data.buffer);
    page.micSentS += event.data.length / context.sampleRate;
    $("mic-sent").textContent = `${page.micSentS.toFixed(1)} s`;
  };
  mic = { stream, context, ws };
  $("mic").classList.add("on");
  $("mic").textContent = "Microphone on";
}

function stopMic() {
  if (!mic) return;
  mic.ws.close(1000);
  mic.stream.getTracks().forEach((track) => track.stop());
  mic.context.close();
  mic = null;
  $("mic").classList.remove("on");
  $("mic").textContent = "Microphone";
}

$("start").onclick = start;
$("close").onclick = close;
$("end").onclick = end;
$("speak").onclick = speakFile;
$("interrupt").onclick = () => api("POST", `/sessions/${page.sessionId}/interrupt`).catch((err) => fail(err.message));
$("mic").onclick = () => (mic ? stopMic() : startMic().catch((err) => fail(`microphone: ${err.message || err}`)));
$("video").requestVideoFrameCallback(countFrames);
addEventListener("pagehide", () => {
  if (ownSession && page.sessionId) fetch(`/sessions/${page.sessionId}`, { method: "DELETE", headers: headers(), keepalive: true });
});

(async () => {
  const health = await fetch("/healthz").then((r) => r.json()).catch(() => null);
  if (health && health.auth_required) $("token-row").classList.remove("hidden");
  const linked = new URLSearchParams(location.hash.slice(1)).get("session");
  if (linked) {
    try { await attach(await api("GET", `/sessions/${linked}`)); } catch (err) { fail(`session ${err.message || err}`); }
  }
})();
