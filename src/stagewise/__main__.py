"""``python -m stagewise``: the same command line as ``stagewise``."""
import sys

from stagewise.core.cli.main import main

sys.exit(main())
