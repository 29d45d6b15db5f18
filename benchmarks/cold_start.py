"""Cold starts (issue 14, part 4): what a user waits for before anything is computed.

Run on demand (not a test)::

    .venv/bin/python benchmarks/cold_start.py [--repeats 3] [--no-nuts] [--no-gui]
    .venv/bin/python benchmarks/cold_start.py --breakdown [--repeats 3]
    .venv/bin/python benchmarks/cold_start.py --gui-bayes [--repeats 1]

Every row is a fresh process timed from the outside (wall clock, Python start-up and
imports included), medians of ``--repeats``:

- ``xpcsviewer --help``, ``info FILE``, ``fit FILE`` (least squares) on one demo file;
- ``fit FILE --bayes`` (NUTS, all bins of the file) with an **empty** persistent
  compilation cache, then again in a **second process** with the cache the first one
  filled: the difference is what the cache saves;
- ``fit FILE --bayes`` in a fresh process after the install step's fill
  (``python -m xpcsviewer.commands._precompile --jax``, into a cache of its own; its
  seconds are printed too): the user's first Bayesian fit after ``make install``;
- the GUI: process start to the first painted main window (offscreen), and to the
  end of the start-up warm-up (JAX imported, fits and NUTS compiled in a worker).

``--breakdown``: where the time of a cold ``fit FILE --bayes`` goes, in fresh processes
with an empty cache each: seconds per phase (imports, reading, the automatic least
squares, NUTS tracing, XLA compilation, start, warm-up, draws, extension round,
summaries), with the XLA programs compiled and their compile seconds per phase (from
``jax.monitoring``; compile seconds of programs compiled at once add up beyond the
wall time). ``--breakdown --installed``: the same after the install step's fill (the
programs loaded from the cache, not compiled).

``--gui-bayes``: the window's first Bayesian fit after install: the install step's
fill into a cache of its own, then a fresh process per repeat that starts the real
window offscreen (warm-up on, fits in the fit process), opens the demo file on the g2
tab, clicks Bayesian as soon as it is enabled and times the click to the result drawn
(every bin of the file), with the GUI process's CPU seconds over that span.

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


# The probe of --gui-bayes: the real window (offscreen, warm-up on, fits in the fit
# process) opens the file on the g2 tab; Bayesian is clicked as soon as it can be, and
# the time to the result drawn (sigFitsReady) is printed with the process's CPU time.
_GUI_BAYES_PROBE = r"""
import os, sys, time
t0 = float(sys.argv[1])
path = sys.argv[2]
from PySide6.QtWidgets import QApplication
from PySide6.QtCore import QTimer
app = QApplication([])
from xpcsviewer.gui.main_window import MainWindow
win = MainWindow(restore_session=False, save_session_on_close=False)
win.resize(1400, 900)
win.show()
t = {"window": time.time() - t0}
win.select_tab("g2")
win.open_paths([path])
g2 = win.panels["g2"]
def done(_fits):
    t["shown"] = time.time() - t0
    t["cpu"] = time.process_time()
    app.quit()
g2.sigFitsReady.connect(done)
def poll():
    if "click" not in t and g2.blocks and g2.bayes_btn.isEnabled():
        t["click"] = time.time() - t0
        t["cpu_click"] = time.process_time()
        t["warm_at_click"] = bool(getattr(win, "warmup_done", False))
        g2.bayes_btn.click()
timer = QTimer(); timer.timeout.connect(poll); timer.start(20)
QTimer.singleShot(600000, app.quit)
app.exec()
nan = float("nan")
print(f"GUIBAYES {t.get('window', nan):.3f} {t.get('click', nan):.3f} {t.get('shown', nan):.3f} "
      f"{t.get('cpu', nan) - t.get('cpu_click', nan):.3f} {int(t.get('warm_at_click', False))} "
      f"{g2.fits.n_curves if g2.fits is not None else 0}")
win.shutdown(10000)
"""


def _gui_bayes(f: str, tmp_p: Path, env: dict[str, str], repeats: int,
               cache: str | None = None) -> None:
    """The window's first Bayesian fit after install (issue 49 item 8): the install
    step's fill into a fresh cache (or ``cache``, filled before), then per repeat a
    fresh process: click -> shown."""
    e = dict(env, XPCS_JAX_CACHE_DIR=cache or str(tmp_p / "gui-installed-cache"),
             XPCS_GUI_WARMUP="1", XPCS_FIT_PROCESS="1")
    if cache is None:
        print(f"install step: JAX fill {_install_fill(e):.1f} s "
              f"(load average {os.getloadavg()[0]:.2f})")
    for i in range(repeats):
        e["XPCSVIEWER_CONFIG_DIR"] = str(tmp_p / f"gui-bayes-cfg{i}")
        load = os.getloadavg()[0]
        out = subprocess.run([sys.executable, "-c", _GUI_BAYES_PROBE, repr(time.time()), f],
                             env=e, capture_output=True, text=True, cwd=REPO)
        line = [x for x in out.stdout.splitlines() if x.startswith("GUIBAYES")]
        if not line:
            raise RuntimeError(f"GUI probe failed: {out.stderr[-800:]}")
        w, c, s, cpu, warm, n = line[-1].split()[1:]
        print(f"run {i + 1} (load average {load:.2f}): window {float(w):.2f} s, Bayesian "
              f"clicked at {float(c):.2f} s ({'after' if warm == '1' else 'during'} the "
              f"warm-up), result shown {float(s) - float(c):.2f} s after the click "
              f"({n} bins; GUI process CPU {float(cpu):.2f} s)")


# The probe of --breakdown: the fit command in this process, its phases timed by
# wrapping the functions that run them (the wrapped names are the fitting modules').
_BREAKDOWN_PROBE = r"""
import collections, contextlib, sys, time
t_start = float(sys.argv[1])
stack, wall, last = ["python start-up"], collections.Counter(), [t_start]
comp = collections.defaultdict(lambda: [0, 0.0])
def enter(name):
    now = time.time(); wall[stack[-1]] += now - last[0]; last[0] = now; stack.append(name)
def leave():
    now = time.time(); wall[stack[-1]] += now - last[0]; last[0] = now; stack.pop()
@contextlib.contextmanager
def phase(name):
    enter(name)
    try:
        yield
    finally:
        leave()
def wrap(obj, attr, name):
    f = getattr(obj, attr)
    def w(*a, **k):
        with phase(name() if callable(name) else name):
            return f(*a, **k)
    setattr(obj, attr, w)
enter("imports (CLI, JAX, NumPyro)")
import jax
from jax import monitoring
def on_event(event, seconds, **kw):
    if event.endswith("backend_compile_duration"):
        comp[stack[-1]][0] += 1; comp[stack[-1]][1] += seconds
monitoring.register_event_duration_secs_listener(on_event)
import numpy as np
import xpcsviewer.fitting as FIT
import xpcsviewer.fitting.bayes as B
import xpcsviewer.fitting.bayes_run as R
import xpcsviewer.fitting.results as RES
import xpcsviewer.jobs.fit as J
from xpcsviewer.cli import main
leave()
wrap(J, "_load", "read the file")
wrap(FIT, "fit_g2", "least squares (automatic model choice)")
wrap(RES, "fit_record", "record")
for name in ("_summarise", "_bayes_statuses", "bfmi"):
    wrap(B, name, "NUTS summaries and statuses")
wrap(R._PerBinSampler, "prepare", "NUTS trace + lower")
wrap(R, "_compile_all", "NUTS XLA compile")
after = [False]
chunks = B._run_per_bin_chunks
def run_chunks(*a, **k):
    try:
        return chunks(*a, **k)
    finally:
        after[0] = True
B._run_per_bin_chunks = run_chunks
blk = R._block
def block(*a, **k):
    with phase("NUTS extension round" if after[0] else "NUTS draws"):
        return jax.block_until_ready(blk(*a, **k))
R._block = block
call = R._Program.__call__
def program(self, *a):
    name = stack[-1]
    if not name.startswith("NUTS draws") and not name.startswith("NUTS extension"):
        name = "NUTS start" if str(getattr(a[2], "dtype", "")) == "uint32" else "NUTS warm-up"
    with phase(name):
        return jax.block_until_ready(call(self, *a))
R._Program.__call__ = program
with phase("rest of the command"):
    rc = main(sys.argv[2:])
now = time.time(); wall[stack[-1]] += now - last[0]
for p, s in wall.items():
    n, c = comp[p]
    print(f"PHASE\t{p}\t{s:.3f}\t{n}\t{c:.3f}")
print(f"PHASE\ttotal\t{now - t_start:.3f}\t{sum(v[0] for v in comp.values())}\t"
      f"{sum(v[1] for v in comp.values()):.3f}")
"""


def _install_fill(env: dict[str, str]) -> float:
    """The install step's JAX fill into ``env``'s cache: its seconds."""
    return _run([sys.executable, "-m", "xpcsviewer.commands._precompile", "--jax", "--quiet"],
                env)


def _breakdown(f: str, tmp_p: Path, env: dict[str, str], repeats: int,
               installed: bool = False) -> None:
    rows: dict[str, list[tuple[float, int, float]]] = {}
    for i in range(repeats):
        e = dict(env, XPCS_JAX_CACHE_DIR=str(tmp_p / f"breakdown-cache-{i}"))
        if installed:
            print(f"install fill: {_install_fill(e):.1f} s")
        load = os.getloadavg()[0]
        out = subprocess.run([sys.executable, "-c", _BREAKDOWN_PROBE, repr(time.time()), "fit",
                              f, "--bayes", "-o", str(tmp_p / f"bd{i}.json"), "--quiet",
                              "--overwrite"], env=e, capture_output=True, text=True, cwd=REPO)
        if out.returncode not in (0, 3):
            raise RuntimeError(f"breakdown probe failed: {out.stderr[-600:]}")
        print(f"run {i + 1}: load average at start {load:.2f}")
        for line in out.stdout.splitlines():
            if line.startswith("PHASE\t"):
                _, name, s, n, c = line.split("\t")
                rows.setdefault(name, []).append((float(s), int(n), float(c)))
    print(f"{'phase (cold fit --bayes, medians)':42s} {'s':>7s} {'programs':>9s} {'XLA s':>7s}"
          "   (s of each run)")
    for name, xs in rows.items():
        s = statistics.median(x[0] for x in xs)
        n = statistics.median(x[1] for x in xs)
        c = statistics.median(x[2] for x in xs)
        each = ", ".join(f"{x[0]:.2f}" for x in xs)
        print(f"{name:42s} {s:7.2f} {n:9.0f} {c:7.2f}   ({each})")


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
    ap.add_argument("--breakdown", action="store_true",
                    help="only the phases of a cold fit --bayes (see the module docstring)")
    ap.add_argument("--gui-bayes", action="store_true",
                    help="only the window's first Bayesian fit after install: click -> shown")
    ap.add_argument("--cache", default=None,
                    help="with --gui-bayes: a compilation cache filled before (no fill)")
    ap.add_argument("--installed", action="store_true",
                    help="with --breakdown: after the install step's fill")
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
        if args.breakdown:
            _breakdown(f, tmp_p, env, args.repeats, args.installed)
            return 0
        if args.gui_bayes:
            _gui_bayes(f, tmp_p, env, args.repeats, args.cache)
            return 0

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
            cold, second, fill, first = [], [], [], []
            for i in range(max(1, args.repeats - 1)):
                e = dict(env, XPCS_JAX_CACHE_DIR=str(tmp_p / f"nuts-cache-{i}"))
                cold.append(_run([*EXE, "fit", f, "--bayes", "-o", str(tmp_p / f"b{i}.json"),
                                  "--quiet"], e))
                second.append(_run([*EXE, "fit", f, "--bayes", "-o", str(tmp_p / f"c{i}.json"),
                                    "--quiet"], e))
                e = dict(env, XPCS_JAX_CACHE_DIR=str(tmp_p / f"installed-cache-{i}"))
                fill.append(_install_fill(e))
                first.append(_run([*EXE, "fit", f, "--bayes", "-o", str(tmp_p / f"d{i}.json"),
                                   "--quiet"], e))
            print(f"{'fit --bayes, empty cache':34s} {_median(cold)}")
            print(f"{'fit --bayes, second process':34s} {_median(second)}")
            print(f"{'install step: JAX fill':34s} {_median(fill)}")
            print(f"{'fit --bayes, first after install':34s} {_median(first)}")

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
