"""``make bench``: run every benchmark and print its table."""

from __future__ import annotations

import sys

from bench import ttft


def main() -> None:
    selected = set(sys.argv[1:])
    for name, module in (("ttft", ttft),):
        if selected and name not in selected:
            continue
        print("\n".join(module.run()), flush=True)
        print()


if __name__ == "__main__":
    main()
