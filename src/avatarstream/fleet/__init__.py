"""Many sessions on many machines: avatarstream as a Ray Serve application (``pip install avatarstream[fleet]``).

One ingress takes the single server's HTTP API and routes each session's audio
and control to the replica that owns it; every replica holds one session slot
(a Ray Serve request that lasts as long as its session, which is also the
admission control and what autoscaling counts) and runs the single server's
own app on its node, so video is made there (the ingress proxies its routes, and
the session's video links reach the replica directly). Each chunk the replica
reports the session's small resumable state to the ingress; when a replica or
its node dies, the ingress carries the session on on another replica from
that state, with its timeline continuing. docs/fleet.md has the set-up.
"""
