"""``make bench``: run every benchmark and print its table."""

from __future__ import annotations

import sys

from bench import concurrency, deep, local_seed, propagation, routing, search, ttft


def main() -> None:
    selected = set(sys.argv[1:])
    # local_seed runs the embedded model (minutes): only when asked for by name
    for name, module in (
        ("ttft", ttft),
        ("routing", routing),
        ("search", search),
        ("deep", deep),
        ("concurrency", concurrency),
        ("propagation", propagation),
        ("local_seed", local_seed),
    ):
        if (selected and name not in selected) or (not selected and name == "local_seed"):
            continue
        print("\n".join(module.run()), flush=True)
        print()


if __name__ == "__main__":
    main()
