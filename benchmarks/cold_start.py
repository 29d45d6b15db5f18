"""Cold starts (issue 14, part 4): what a user waits for before anything is computed.

Run on demand (not a test)::

    .venv/bin/python benchmarks/cold_start.py [--repeats 3] [--no-nuts] [--no-gui]

Every row is a fresh process timed from the outside (wall clock, Python start-up and
imports included), medians of ``--repeats``:

- ``xpcsviewer --help``, ``info FILE``, ``fit FILE`` (least squares) on one demo file;
- ``fit FILE --bayes`` (NUTS, all bins of the file) with an **empty** persistent
  compilation cache, then again in a **second process** with the cache the first one
  filled: the difference is what the cache saves;
- the GUI: process start to the first painted main window (offscreen), and to the
  end of the start-up warm-up (JAX imported, fits and NUTS compiled in a worker).

The demo file is written to a temporary folder that is removed afterwards.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXE = [sys.executable, "-m", "xpcsviewer"]

_GUI_PROBE = r"""
import os, sys, time
t0 = float(sys.argv[1])
from PySide6.QtWidgets import QApplication
from PySide6.QtCore import QTimer
app = QApplication([])
from xpcsviewer.gui.main_window import MainWindow
win = MainWindow(restore_session=False, save_session_on_close=False)
win.show()
first = {}
def painted():
    first.setdefault("window", time.time() - t0)
QTimer.singleShot(0, painted)
def poll():
    if getattr(win, "warmup_done", False):
        first["warm"] = time.time() - t0
        app.quit()
timer = QTimer(); timer.timeout.connect(poll); timer.start(20)
QTimer.singleShot(240000, app.quit)
app.exec()
print(f"{first.get('window', float('nan')):.3f} {first.get('warm', float('nan')):.3f}")
win.shutdown(10000)
"""


def _run(args: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(args, env=env, capture_output=True, text=True, cwd=REPO)
    dt = time.perf_counter() - t0
    if proc.returncode not in (0, 3):
        raise RuntimeError(f"{' '.join(args)} failed ({proc.returncode}): {proc.stderr[-400:]}")
    return dt


def _median(xs: list[float]) -> str:
    each = ", ".join(f"{x:.2f}" for x in xs)
    return f"{statistics.median(xs):6.2f} s" + (f" (of {len(xs)}: {each})" if len(xs) > 1 else "")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-nuts", action="store_true")
    ap.add_argument("--no-gui", action="store_true")
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="xpcs-cold-") as tmp:
        tmp_p = Path(tmp)
        env = dict(os.environ, JAX_PLATFORMS=os.environ.get("JAX_PLATFORMS", "cpu"),
                   QT_QPA_PLATFORM="offscreen", XPCS_JAX_CACHE_DIR=str(tmp_p / "cache"))
        from xpcsviewer.synthetic.demo import write_demo

        write_demo(tmp_p / "demo", seed=0)
        f = str(next((tmp_p / "demo").glob("A02_*_results.hdf")))
        print(f"load average at start: {os.getloadavg()[0]:.2f}  (2 cores shared: compare rows "
              "only within one run)")

        rows: dict[str, list[float]] = {"--help": [], "info": [], "fit (least squares)": []}
        _run([*EXE, "fit", f, "-o", str(tmp_p / "w.json"), "--quiet"], env)  # fill the cache
        for i in range(args.repeats):
            rows["--help"].append(_run([*EXE, "--help"], env))
            rows["info"].append(_run([*EXE, "info", f], env))
            rows["fit (least squares)"].append(
                _run([*EXE, "fit", f, "-o", str(tmp_p / f"f{i}.json"), "--quiet", "--overwrite"],
                     env))
        for name, xs in rows.items():
            print(f"{name:34s} {_median(xs)}")

        if not args.no_nuts:
            cold, second = [], []
            for i in range(max(1, args.repeats - 1)):
                e = dict(env, XPCS_JAX_CACHE_DIR=str(tmp_p / f"nuts-cache-{i}"))
                cold.append(_run([*EXE, "fit", f, "--bayes", "-o", str(tmp_p / f"b{i}.json"),
                                  "--quiet"], e))
                second.append(_run([*EXE, "fit", f, "--bayes", "-o", str(tmp_p / f"c{i}.json"),
                                    "--quiet"], e))
            print(f"{'fit --bayes, empty cache':34s} {_median(cold)}")
            print(f"{'fit --bayes, second process':34s} {_median(second)}")

        if not args.no_gui:
            win, warm = [], []
            for i in range(args.repeats):
                e = dict(env, XPCS_GUI_WARMUP="1",
                         XPCSVIEWER_CONFIG_DIR=str(tmp_p / f"cfg{i}"))
                out = subprocess.run([sys.executable, "-c", _GUI_PROBE, repr(time.time())], env=e,
                                     capture_output=True, text=True, cwd=REPO)
                a, b = out.stdout.split()[-2:]
                win.append(float(a))
                warm.append(float(b))
            print(f"{'GUI: process start to window':34s} {_median(win)}")
            print(f"{'GUI: start to warm-up done':34s} {_median(warm)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
