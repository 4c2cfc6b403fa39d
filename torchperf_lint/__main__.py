"""The `torchperf-lint` command's entry point (and `python -m torchperf_lint`).

`--version` alone is answered here, before the command line's parser (click, a third of the
time `--version` took) is imported; everything else is `cli.main`.
"""

from __future__ import annotations

import sys

from torchperf_lint import __version__


def main() -> None:
    if sys.argv[1:] == ["--version"]:
        # As click's `version_option` prints it.
        print(f"torchperf-lint, version {__version__}")
        return
    from torchperf_lint.cli import main as command

    command()


if __name__ == "__main__":
    main()
