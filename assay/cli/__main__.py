"""`python -m assay.cli`: the `assay` command, as the console script runs it (importing this module, as
tests/assay/test_pure_core.py does with every module, runs nothing)."""

import sys

from assay.cli import main

if __name__ == "__main__":
    sys.exit(main())
