"""``avatarstream bench``: named scenarios, JSON results and PNG plots."""

from __future__ import annotations

import argparse
import datetime
import json
import platform
from pathlib import Path

from avatarstream.benchmarks.catalog import SUMMARIES
from avatarstream.cli.help_format import DefaultsHelpFormatter
from avatarstream.cli.model_args import add_model_arguments, model_options, upscale_request
from avatarstream.cli.runtime_args import add_compile_argument, add_runtime_arguments
from avatarstream.errors import InputError
from avatarstream.families.registry import check_weights


def add_parser(commands: argparse._SubParsersAction, model: str | None, upscaler: str | None = None) -> None:
    p = commands.add_parser(
        "bench",
        help="measure time to first frame, fps, real-time factor, per-stage time, overhead and memory",
        description=(
            "Run benchmark scenarios and write one JSON per scenario plus PNG plots. Scenarios: "
            + "; ".join(f"{name}: {summary}" for name, summary in SUMMARIES.items())
        ),
        epilog="example: avatarstream bench --scenario speed --scenario overhead --out bench/results/today",
        formatter_class=DefaultsHelpFormatter,
    )
    p.add_argument("--scenario", action="append", choices=sorted(SUMMARIES), help="scenario to run (repeatable; default: speed)")
    add_runtime_arguments(p)
    add_compile_argument(p)
    p.add_argument("--seconds", type=float, default=30.0, help="audio length of each measured run")
    p.add_argument("--minutes", type=float, default=30.0, help="session length of the memory scenario")
    p.add_argument("--repeats", type=int, default=3, help="runs per measurement (the median is reported)")
    p.add_argument("--out", type=Path, default=Path("bench/results/latest"), help="folder for JSON and PNG results")
    add_model_arguments(p, model, upscaler)  # loaded exactly as render loads it
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.seconds <= 0 or args.minutes <= 0 or args.repeats < 1:
        raise InputError("--seconds and --minutes must be positive and --repeats at least 1")
    options, upscale = model_options(args), upscale_request(args)
    if args.weights is not None:  # a folder named must be good (a scenario that makes its own model needs none)
        check_weights(args.model, args.weights, options)
    upscale.check()
    import torch  # the scenarios load models: torch and the model code come in only now that the command line is good
    from tqdm import tqdm

    from avatarstream.benchmarks.context import BenchContext
    from avatarstream.benchmarks.scenarios import SCENARIOS
    from avatarstream.runtime.cpu_threads import set_threads
    from avatarstream.runtime.devices import resolve_device

    set_threads(args.threads, follow_machine=False)  # scenarios compare runs: one thread count for all (contention's renders apart)
    device = resolve_device(args.device)
    args.out.mkdir(parents=True, exist_ok=True)
    ctx = BenchContext(
        args.model,
        device,
        args.seconds,
        args.repeats,
        args.out,
        minutes=args.minutes,
        weights=args.weights,
        model_options=options,
        argv=args.argv,
        compile=args.compile,
        upscale=upscale,
    )
    machine = {
        "date": datetime.date.today().isoformat(),
        "device": torch.cuda.get_device_name(device)
        if device.type == "cuda"
        else f"CPU ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)",
        "torch": torch.__version__,
        "model": args.model,
    }
    for name in tqdm(args.scenario or ["speed"], desc="bench", unit="scenario"):
        result = {"scenario": name, **machine, "seconds": args.seconds, "repeats": args.repeats, **SCENARIOS[name](ctx)}
        path = args.out / f"{name}.json"
        path.write_text(json.dumps(result, indent=2, default=float))
        tqdm.write(f"{name}: {_headline(result)} -> {path}")
    return 0


def _headline(result: dict) -> str:
    keys = ("ttff_s", "realtime_factor", "fps_out", "overhead_pct", "last_over_first", "long_over_short", "i_chunk_cost_pct", "speedup", "identical_frames")
    if "rows" in result and all("slowdown" in r for r in result["rows"]):
        return ", ".join(
            f"{r['variant']}: {r['realtime_factor_alone']}x alone, {r['realtime_factor_loaded']}x loaded ({r['slowdown']}x slower)" for r in result["rows"]
        )
    shown = {k: result[k] for k in keys if k in result}
    return ", ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in shown.items()) or "done"
