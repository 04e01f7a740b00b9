"""The `weir-py` command: `weir-py build MODULE:CLASS -o plugin.wasm [--path DIR] [--crd FILE]`."""

from __future__ import annotations

import sys

from . import build

USAGE = "usage: weir-py build MODULE:CLASS -o COMPONENT.wasm [--path DIR]... [--crd FILE] [--wit DIR]"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if args else 2
    if args[0] != "build":
        print(f"weir-py: unknown command {args[0]!r}\n{USAGE}", file=sys.stderr)
        return 2
    return build.main(args[1:], prog="weir-py build")


if __name__ == "__main__":
    sys.exit(main())
