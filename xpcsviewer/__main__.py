"""``python -m xpcsviewer``."""

from xpcsviewer._entry import main  # first: it catches Ctrl-C from its first line

if __name__ == "__main__":
    import sys

    sys.exit(main())
