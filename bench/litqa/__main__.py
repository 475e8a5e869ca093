"""`python -m bench.litqa PART ...` from the checkout (or `python bench/litqa PART ...`)."""

import sys
from pathlib import Path

if not __package__:  # run as `python bench/litqa`: the checkout is not on the path yet
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.litqa.cli import main

main()
