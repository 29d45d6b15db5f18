"""Qt-free view data of the tabs and the exported figures: what a g2 panel, a SAXS plot
or an image shows, computed once and drawn by either (GUI thread or matplotlib)."""
