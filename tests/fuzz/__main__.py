"""``python -m fuzz`` (with ``tests`` on PYTHONPATH; ``make fuzz`` runs it): the budgeted campaign, and its parts.

python -m fuzz [--seconds S] [--targets a,b] [--no-api]   every target (and the API's stateful run), S seconds in all
python -m fuzz replay TARGET FILE...                      what each saved input does now (a finding, once fixed: refused)
python -m fuzz child TARGET --seconds S                   one target under libFuzzer (what the campaign starts)
python -m fuzz cover TARGET [--seeds-only]                 the coverage its corpus reaches
python -m fuzz api --seconds S                             schemathesis's stateful runs against a server of its own
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

OUT = Path("out/fuzz")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m fuzz")
    parser.add_argument("command", nargs="?", default="campaign", choices=["campaign", "replay", "child", "cover", "api"])
    parser.add_argument("target", nargs="?")
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--seconds", type=float, default=900)
    parser.add_argument("--targets", default="all")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--report", type=Path)
    parser.add_argument("--seeds-only", action="store_true")
    parser.add_argument("--no-api", action="store_true")
    args = parser.parse_args(argv)
    if args.command == "campaign":
        from fuzz.campaign import all_targets, campaign

        names = all_targets() if args.targets == "all" else [n for n in args.targets.split(",") if n and n != "api"]
        unknown = sorted(set(names) - set(all_targets()))
        if unknown:
            parser.error(f"unknown targets {unknown}; there are: {', '.join(all_targets())}, api")
        api = not args.no_api and (args.targets == "all" or "api" in args.targets.split(","))
        args.out.mkdir(parents=True, exist_ok=True)
        campaign(names, args.seconds, args.out, api)
        print(f"report: {args.out / 'report.json'}; findings under {args.out / 'findings'} (replay one: python -m fuzz replay TARGET FILE)")
        return 0
    if args.command == "api":
        from fuzz.api_stateful import run_for

        print(json.dumps(run_for(args.seconds, args.out)))
        return 0
    if args.target is None:
        parser.error(f"{args.command} needs a TARGET")
    if args.command == "replay":
        from fuzz.replay import replay

        return replay(args.target, args.files)
    if args.command == "child":
        from fuzz.libfuzzer import main as fuzz_one

        fuzz_one(args.target, args.out, int(args.seconds))
        return 0
    from fuzz.replay import cover

    report = args.report or args.out / "coverage" / f"{args.target}.json"
    print(json.dumps(cover(args.target, args.out / "corpus" / args.target, report, args.seeds_only)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
