// Plays the live stream and measures it. window.previewStats is what the page shows,
// kept in one object so that a test driving the page reads the same numbers a person sees.
"use strict";

const video = document.getElementById("video");
const mode = new URLSearchParams(location.search).get("mode") === "webrtc" ? "webrtc" : "hls";
const stats = (window.previewStats = { mode, ttffMs: null, fps: 0, frames: 0, error: null });
const show = (id, text) => { document.getElementById(id).textContent = text; };
show("mode", mode);

// Time to first frame: from opening the page to the first frame painted.
// Live fps: frames painted during the last second.
const painted = [];
function onFrame(now) {
  stats.frames += 1;
  if (stats.ttffMs === null) {
    stats.ttffMs = Math.round(performance.now());
    show("ttff", `${(stats.ttffMs / 1000).toFixed(2)} s`);
    show("status", "playing");
  }
  painted.push(now);
  while (painted.length && painted[0] < now - 1000) painted.shift();
  video.requestVideoFrameCallback(onFrame);
}
video.requestVideoFrameCallback(onFrame);
setInterval(() => {
  const now = performance.now();
  while (painted.length && painted[0] < now - 1000) painted.shift();
  stats.fps = painted.length;
  show("fps", `${stats.fps}`);
}, 250);

function fail(message) {
  stats.error = message;
  show("status", message);
}

// The playlist appears with the first segment. Until then /status says it is not there: asking for the playlist
// itself would be answered 404, which the browser logs as an error every time.
async function waitForPlaylist() {
  for (;;) {
    try {
      const response = await fetch("/status", { cache: "no-store" });
      if (response.ok && (await response.json()).hls_ready) return;
    } catch (err) { /* the server may still be starting */ }
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
}

async function playHls() {
  const url = "/hls/index.m3u8";
  await waitForPlaylist();
  show("status", "loading");
  if (window.Hls && Hls.isSupported()) {
    const hls = new Hls({ liveSyncDurationCount: 2, manifestLoadingMaxRetry: 10, levelLoadingMaxRetry: 10 });
    hls.on(Hls.Events.ERROR, (_, data) => { if (data.fatal) fail(`hls.js: ${data.type} ${data.details}`); });
    hls.loadSource(url);
    hls.attachMedia(video);
  } else if (video.canPlayType("application/vnd.apple.mpegurl")) {
    video.src = url;  // Safari plays HLS natively
  } else {
    fail("this browser can play neither hls.js (Media Source Extensions) nor HLS");
    return;
  }
  video.play().catch(() => {});
}

async function playWebRtc() {
  const pc = new RTCPeerConnection();
  // The server forwards the encoder's H.264 as is, so offer H.264 only.
  const h264 = RTCRtpReceiver.getCapabilities("video").codecs.filter((c) => c.mimeType === "video/H264");
  if (!h264.length) return fail("this browser has no H.264 for WebRTC; use ?mode=hls");
  pc.addTransceiver("video", { direction: "recvonly" }).setCodecPreferences(h264);
  pc.addTransceiver("audio", { direction: "recvonly" });  // the server decodes its AAC and sends Opus
  window.previewPeer = pc;
  const stream = new MediaStream();
  pc.ontrack = (event) => {
    stream.addTrack(event.track);
    if (video.srcObject !== stream) video.srcObject = stream;
    video.play().catch(() => {});
  };
  pc.onconnectionstatechange = () => show("status", `WebRTC ${pc.connectionState}`);
  await pc.setLocalDescription(await pc.createOffer());
  await new Promise((resolve) => {  // send one complete offer: the server does not trickle
    if (pc.iceGatheringState === "complete") return resolve();
    pc.onicegatheringstatechange = () => pc.iceGatheringState === "complete" && resolve();
  });
  const response = await fetch("/offer", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ sdp: pc.localDescription.sdp, type: pc.localDescription.type }),
  });
  if (!response.ok) return fail(`offer refused: HTTP ${response.status}`);
  await pc.setRemoteDescription(await response.json());
}

(mode === "webrtc" ? playWebRtc() : playHls()).catch((err) => fail(String(err)));
