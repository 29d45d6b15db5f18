"""``python -m xpcsviewer``."""

import sys

from xpcsviewer._entry import main

sys.exit(main())
