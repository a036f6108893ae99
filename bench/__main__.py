"""``make bench``: run every benchmark and print its table; ``python -m bench NAME ...`` runs those named."""

from __future__ import annotations

import sys

from bench import (
    concurrency,
    deep,
    disconnect,
    hostile,
    injection,
    memory,
    routing,
    search,
    ttft,
)

BENCHMARKS = {
    "ttft": ttft,
    "routing": routing,
    "search": search,
    "deep": deep,
    "concurrency": concurrency,
    "disconnect": disconnect,
    "hostile": hostile,
    "injection": injection,
    "memory": memory,
}
# the embedded model, minutes to an hour: only when asked for by name
SLOW = {"injection"}
USAGE = (
    "usage: python -m bench [NAME ...]\n"
    f"Without a name every benchmark runs except the slow ones ({', '.join(sorted(SLOW))}).\n"
    f"Names: {', '.join(BENCHMARKS)}. What each measures: docs/benchmarks.md."
)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if any(a in ("-h", "--help") for a in args):
        print(USAGE)
        return 0
    unknown = [a for a in args if a not in BENCHMARKS]
    if unknown:
        print(f"no such benchmark: {', '.join(unknown)}\n{USAGE}", file=sys.stderr)
        return 2
    selected = set(args)
    for name, module in BENCHMARKS.items():
        if (selected and name not in selected) or (not selected and name in SLOW):
            continue
        print("\n".join(module.run()), flush=True)
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
