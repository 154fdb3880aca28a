"""`python -m clawviz ...`."""

import sys

from clawviz.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
