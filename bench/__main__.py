"""``make bench``: run every benchmark and print its table."""

from __future__ import annotations

import sys

from bench import (
    cache,
    concurrency,
    deep,
    disconnect,
    hostile,
    httplog,
    injection,
    local_seed,
    memory,
    memory_local,
    propagation,
    ratelimit,
    routing,
    search,
    ttft,
    turncost,
    turnfixed,
)

# the embedded model, minutes to an hour: only when asked for by name
SLOW = {"local_seed", "injection", "memory_local"}


def main() -> None:
    selected = set(sys.argv[1:])
    for name, module in (
        ("ttft", ttft),
        ("routing", routing),
        ("search", search),
        ("cache", cache),
        ("deep", deep),
        ("concurrency", concurrency),
        ("turnfixed", turnfixed),
        ("propagation", propagation),
        ("local_seed", local_seed),
        ("disconnect", disconnect),
        ("httplog", httplog),
        ("ratelimit", ratelimit),
        ("hostile", hostile),
        ("injection", injection),
        ("turncost", turncost),
        ("memory", memory),
        ("memory_local", memory_local),
    ):
        if (selected and name not in selected) or (not selected and name in SLOW):
            continue
        print("\n".join(module.run()), flush=True)
        print()


if __name__ == "__main__":
    main()
