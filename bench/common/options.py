"""The command line the suites share: sizes that ``--quick`` shrinks, and ``--output``."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path

from bench.common.report import Suite

# A drain suite's sizes (bench.runtime, bench.tracing): a smoke run's, and a full run's.
DRAIN_QUICK = {"events": 1_000, "rounds": 1, "warmup": 200}
DRAIN_FULL = {"events": 5_000, "rounds": 3, "warmup": 500}


def parse_sized(
    parser: argparse.ArgumentParser,
    argv: Sequence[str],
    suite: Suite,
    quick_help: str,
    quick: Mapping[str, float],
    full: Mapping[str, float],
) -> argparse.Namespace:
    """Add ``--quick`` (``quick_help``) and ``--output`` to ``parser`` and parse ``argv``:
    each size left out (None) takes its ``quick`` or ``full`` default, and ``--output``
    defaults to the docs, or a temp file on a quick run (``Suite.output``)."""
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--output", type=Path, help="default docs/benchmarks.md (temp: --quick)")
    args = parser.parse_args(argv)
    for name, default in (quick if args.quick else full).items():
        if getattr(args, name) is None:
            setattr(args, name, default)
    args.output = suite.output(args.output, args.quick)
    return args


def drain_parser(prog: str, description: str | None, each: str) -> argparse.ArgumentParser:
    """A drain suite's parser with ``--events``, ``--rounds`` (of every ``each``) and
    ``--warmup``; the suite adds its own options, then calls ``parse_drains``."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--events", type=int, help="events per drain (5000)")
    parser.add_argument("--rounds", type=int, help=f"rounds of every {each} (3)")
    parser.add_argument("--warmup", type=int, help="events per drain of the warm-up round (500)")
    return parser


def parse_drains(
    parser: argparse.ArgumentParser, argv: Sequence[str], suite: Suite
) -> argparse.Namespace:
    return parse_sized(parser, argv, suite, "1,000 events, 1 round", DRAIN_QUICK, DRAIN_FULL)
