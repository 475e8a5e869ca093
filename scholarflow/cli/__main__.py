"""`python -m scholarflow.cli`: the `scholarflow` command."""

import sys

from scholarflow.cli.main import main

sys.exit(main())
