"""scripts/real_window_raw.sh: issue 45 walked in a real X window (Xvfb, xdotool,
ImageMagick), where those tools are installed (skipped otherwise, as on CI)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.gui, pytest.mark.slow]

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "real_window_raw.sh"


@pytest.mark.skipif(not all(shutil.which(t) for t in ("Xvfb", "xdotool", "import")),
                    reason="needs Xvfb, xdotool and ImageMagick (a real X window)")
def test_open_find_mask_exclude_correlate_in_a_real_window(tmp_path):
    env_bin = str(Path(sys.executable).parent)
    out = subprocess.run(["bash", str(SCRIPT), str(tmp_path)], capture_output=True,
                         text=True, timeout=600, env={"PATH": f"{env_bin}:/usr/bin:/bin",
                                                      "BIN": env_bin, "HOME": str(tmp_path)})
    if out.returncode == 2:  # Qt's X11 libraries missing: no real window here
        pytest.skip(out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "no X")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "frames excluded 900-939, pixels masked 7" in out.stdout
    for name in ("01_raw_tab_inspected", "04_correlate_dialog", "06_g2_tab"):
        assert (tmp_path / f"{name}.png").stat().st_size > 10_000
