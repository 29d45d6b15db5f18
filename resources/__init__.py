"""Non-code assets of the app (icons, desktop entry), installed as ``xpcsviewer.resources``."""
