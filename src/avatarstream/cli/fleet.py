"""``avatarstream fleet``: many sessions on a Ray Serve fleet, with the same HTTP API as ``serve``."""

from __future__ import annotations

import argparse
import importlib.util

from avatarstream.cli.help_format import DefaultsHelpFormatter
from avatarstream.cli.model_args import add_model_arguments, model_options
from avatarstream.cli.runtime_args import add_compile_argument, add_runtime_arguments
from avatarstream.cli.serve import add_server_arguments, server_settings
from avatarstream.errors import InputError
from avatarstream.families.registry import check_weights
from avatarstream.output_paths import check_port


def add_parser(commands: argparse._SubParsersAction, model: str | None, upscaler: str | None = None) -> None:
    p = commands.add_parser(
        "fleet",
        help="serve live sessions on a Ray Serve fleet: one session slot per replica, the API of `serve`",
        description=(
            "Run sessions on Ray Serve replicas, one session slot each, behind one ingress that speaks the same HTTP API "
            "as `avatarstream serve` (clients do not change). Video (HLS, WebRTC, the MP4) is served by the replica "
            "that makes it; RTMP and Kinesis outputs are pushed from there. A session whose replica or node dies "
            "resumes on another replica from its saved state. Needs the fleet extra: pip install 'avatarstream[fleet]'."
        ),
        epilog=(
            "examples: avatarstream fleet --replicas 2   (one machine, the bundled model; sessions at http://127.0.0.1:8000/sessions)\n"
            "          avatarstream fleet --address auto --min-replicas 1 --max-replicas 8 --replica-gpus 1 --replica-host auto "
            "--host 0.0.0.0 --token $TOKEN --model NAME --weights DIR ...   (on a running Ray cluster; docs/fleet.md)"
        ),
        formatter_class=DefaultsHelpFormatter,
    )
    add_server_arguments(p)
    p.add_argument("--replicas", type=int, help="session slots (replicas) to run; sets both --min-replicas and --max-replicas (default: 2)")
    p.add_argument("--min-replicas", type=int, help="autoscaling: fewest replicas")
    p.add_argument("--max-replicas", type=int, help="autoscaling: most replicas; a session request beyond every slot gets 503 with Retry-After")
    p.add_argument("--target-busy", type=float, default=0.8, help="autoscaling: the share of slots kept busy (below 1 keeps free slots ready)")
    p.add_argument("--replica-cpus", type=float, default=1.0, help="CPUs each replica reserves")
    p.add_argument("--replica-gpus", type=float, default=0.0, help="GPUs each replica reserves (1 for a real model)")
    p.add_argument("--replica-host", default="127.0.0.1", help="where each replica serves its video: 'auto' is its node's address (needs --token)")
    p.add_argument("--drain-timeout", type=float, default=3600.0, help="seconds a replica that is scaled away waits for its session to end")
    p.add_argument(
        "--resume-timeout",
        type=float,
        default=60.0,
        help="seconds a session whose replica died may take to resume on another (a free slot, its start, the speech sent again); then it fails with the reason",
    )
    p.add_argument("--address", help="Ray cluster to join ('auto': the one this machine belongs to); default: start one here")
    p.add_argument("--num-cpus", type=int, help="CPUs of the Ray cluster started here (default: all)")
    add_runtime_arguments(p)
    add_compile_argument(p)
    add_model_arguments(p, model, upscaler)
    p.set_defaults(run=run)


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ValueError:  # a module set to None in sys.modules (how a test hides it)
        return False


def run(args: argparse.Namespace) -> int:
    if not _installed("ray"):  # looked for, not imported: run_fleet sets Ray's environment before Ray's first import
        raise InputError("the fleet needs Ray Serve (ray is missing): pip install 'avatarstream[fleet]'")
    if args.address is None:  # the replicas run here, so the folder is theirs (on a cluster it is on their nodes)
        check_weights(args.model, args.weights, model_options(args))  # told before Ray starts and the model loads
    try:
        from avatarstream.fleet.local import run_fleet
        from avatarstream.fleet.settings import FleetSettings
    except ImportError as err:
        raise InputError(f"the fleet needs Ray Serve ({err.name} is missing): pip install 'avatarstream[fleet]'") from err
    if args.replicas is not None and (args.min_replicas is not None or args.max_replicas is not None):
        raise InputError("give --replicas N, or --min-replicas and --max-replicas, not both")
    low = args.replicas if args.replicas is not None else (args.min_replicas if args.min_replicas is not None else 2)
    high = args.replicas if args.replicas is not None else (args.max_replicas if args.max_replicas is not None else max(low, 2))
    settings = FleetSettings(
        serve=server_settings(args, max_sessions=1),
        min_replicas=low,
        max_replicas=high,
        target_busy=args.target_busy,
        replica_host=args.replica_host,
        replica_cpus=args.replica_cpus,
        replica_gpus=args.replica_gpus,
        drain_timeout_s=args.drain_timeout,
        resume_timeout_s=args.resume_timeout,
    )
    check_port(settings.serve.host, settings.serve.port, "--port", what="the fleet's API")
    run_fleet(settings, address=args.address, num_cpus=args.num_cpus)
    return 0
