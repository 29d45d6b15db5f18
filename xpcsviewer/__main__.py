"""``python -m xpcsviewer``."""

import sys

from xpcsviewer.cli import main

sys.exit(main())
