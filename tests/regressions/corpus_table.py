"""The bad-input corpus run as a careless or hostile user would: the closing table.

Usage::

    python tests/regressions/corpus_table.py [--code DIR] [--work DIR]

builds the issue-11 corpus plus the cases of issues 24, 34 and 50 (with the code of this
tree), runs every command line against the code in ``--code`` (default: this tree; give
an old checkout for the "before" column) and prints, per group and in total:
runs, clean (the expected exit, no traceback, no crash, nothing modified, no
temporary left, the message checks of the case), tracebacks, crashes (killed by a
signal), inputs modified, outputs over inputs (a run that changed an input file).

Command lines run one at a time in a child process (restarted after a crash) so
that the parent can fingerprint each run's inputs before and after it. Not a
test (it takes minutes); ``test_issue_24.py`` and ``test_issue_11_corpus.py``
hold the assertions.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


# ------------------------------------------------------------------------ child
def _child() -> int:
    """Run command lines read from stdin (one JSON object a line), answer each."""
    from xpcsviewer.cli import main as cli_main

    for line in sys.stdin:
        job = json.loads(line)
        saved = {k: os.environ.get(k) for k in job.get("env", {})}
        os.environ.update(job.get("env", {}))
        err, out = io.StringIO(), io.StringIO()
        escaped, rc = None, None
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            try:
                rc = cli_main([os.fsdecode(bytes.fromhex(a)) for a in job["args"]])
            except SystemExit as exc:
                rc = exc.code if isinstance(exc.code, int) else 2
            except BaseException:  # recorded
                escaped = traceback.format_exc()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        print(json.dumps({"rc": rc, "stderr": err.getvalue(), "stdout": out.getvalue(),
                          "escaped": escaped}), flush=True)
    return 0


# ----------------------------------------------------------------------- cases
@dataclass
class Run:
    """One command line, what it may exit with, and what it reads."""

    group: str
    args: list
    expect: tuple[int, ...]
    inputs: list = field(default_factory=list)
    env: dict = field(default_factory=dict)
    must: tuple[str, ...] = ()  # words stderr (or stdout) must hold
    must_not: tuple[str, ...] = ()
    limit: int = 0  # file size limit of the child (bytes), 0: none
    process: str | None = None  # run as its own process: "sigint:<delay>", "importint"
    timeout: float = 0  # seconds before a run counts as hung (0: measure's)


@dataclass
class Outcome:
    rc: int | None
    text: str
    traceback: bool
    crash: bool
    modified: int
    temps: int
    clean: bool


def _fp(p: Path) -> tuple | None:
    try:
        st = os.stat(p)
        return (st.st_size, st.st_mtime_ns, hashlib.sha256(Path(p).read_bytes()).hexdigest())
    except OSError:
        return None


def build_runs(work: Path) -> list[Run]:
    """The corpus (issue 11 and 24) and the command lines over it."""
    import importlib.util

    import h5py
    import numpy as np

    spec = importlib.util.spec_from_file_location("xpcs_corpus_table_bc", HERE / "bad_corpus.py")
    bc = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bc
    spec.loader.exec_module(bc)

    from xpcsviewer.io.results.g2stack import g2_side_path, open_g2_stack_writer
    from xpcsviewer.io.results.writer import write_result
    from xpcsviewer.synthetic.results import build_result

    root = work / "corpus"
    root.mkdir(parents=True)
    good = bc.write_good(root / "good_results.hdf")
    good2 = bc.write_good(root / "good2_results.hdf")
    stack = bc.write_good(root / "stack_results.hdf", stack=True)
    results = bc.build_result_cases(root / "results", good, stack)
    degenerate = bc.build_degenerate(root / "degenerate", good)
    shape = tuple(bc.SPEC["geometry"]["shape"])
    raw_good, raws = bc.build_raw_cases(root / "raw", shape)
    qmap_good, qmaps = bc.build_qmap_cases(root / "qmap", good)
    masks = bc.build_mask_cases(root / "mask", shape)
    geo = [a for k, v in {"shape": f"{shape[0]} {shape[1]}", "energy": "10", "det-dist": "5",
                          "pixel-size": "75e-6", "bcx": "20", "bcy": "15"}.items()
           for a in (f"--{k}", *v.split())]
    out = work / "out"
    out.mkdir()
    runs: list[Run] = []
    n = [0]

    def o(suffix: str) -> Path:
        n[0] += 1
        return out / f"o{n[0]}{suffix}"

    # issue 11: every command over every bad file
    for c in results:
        ins = [good, c.path]
        # the name as a one-line message shows it (a newline escaped)
        shown = os.fsdecode(c.path).replace("\n", "\\n")
        runs += [
            Run("bad results", ["info", c.path], (3,), ins, must=(c.dataset or "", shown)),
            Run("bad results", ["fit", good, c.path, "-o", o(".json"), "--quiet"], (3,), ins,
                must=(c.dataset or "", shown)),
            Run("bad results", ["export", good, c.path, "--plot", "g2", "-o", o("_figs"),
                                "--quiet"], (3,), ins, must=(c.dataset or "", shown)),
            Run("bad results", ["average", good, c.path, "-o", o(".hdf"), "--quiet"], (3,),
                ins, must=(c.dataset or "", shown)),
            Run("bad results", ["snapshot", c.path, "--tab", "g2", "-o", o(".png")], (3,),
                ins, must=(c.dataset or "", shown)),
        ]
    for c in degenerate:
        runs.append(Run("degenerate", ["info", c.path], (0,), [c.path]))
        runs.append(Run("degenerate", ["export", c.path, "--plot", "g2", "-o", o("_figs"),
                                       "--quiet"], (0, 3), [c.path]))
    corr = ["--quiet", "--backend", "numpy"]
    for c in raws:
        runs.append(Run("bad raw/q-map/mask", ["correlate", c.path, "--qmap", qmap_good, "-o",
                                                o(".hdf"), *corr], (3,), [c.path, qmap_good],
                        must=(c.dataset or "",)))
    for c in qmaps:
        runs.append(Run("bad raw/q-map/mask", ["correlate", raw_good, "--qmap", c.path, "-o",
                                                o(".hdf"), *corr], (3,), [raw_good, c.path],
                        must=(c.dataset or "",)))
    for c in masks:
        runs.append(Run("bad raw/q-map/mask", ["qmap", *geo, "--mask", c.path, "-o",
                                                o(".hdf")], (3,), [c.path],
                        must=(c.dataset or "",), must_not=("pickle",)))

    # issue 24 item 1: the side file a renamed result reads
    res, extras = build_result(bc.SPEC, seed=7)
    side_dir = work / "side"
    side_dir.mkdir()
    res_p = side_dir / "G01_x_results.hdf"
    side = g2_side_path(res_p)
    t = res.multitau.g2.shape[0]
    with open_g2_stack_writer(side, t, res.qmap.shape) as sink:
        for k in range(t):
            sink(k, np.ones((3, *shape)))
    write_result(res_p, res, saxs_2d=extras["saxs_2d"], c2_maps=extras["c2_maps"],
                 g2_stack_file=side.name)
    renamed = shutil.copyfile(res_p, side_dir / "G01.hdf")
    ins = [renamed, side]
    for args in (["regroup", renamed], ["average", renamed], ["fit", renamed],
                 ["snapshot", renamed, "--tab", "g2"]):
        runs.append(Run("24.1 side file", [*args, "-o", side, "--overwrite", "--quiet"], (2,),
                        ins))
    # item 2: a full disk (every write beyond 1 KB fails), each replacing an old output
    full = work / "full"
    full.mkdir()
    a = shutil.copyfile(good, work / "in_a_results.hdf")
    b = shutil.copyfile(good, work / "in_b_results.hdf")
    figs = full / "figs"
    figs.mkdir()
    cr = ["correlate", raw_good, "--qmap", qmap_good, *corr, "--overwrite"]
    for args, target in (
        (["qmap", *geo, "-o", full / "q.hdf"], full / "q.hdf"),
        (["average", a, b, "-o", full / "avg.hdf", "--quiet"], full / "avg.hdf"),
        (["regroup", res_p, "-o", full / "rg.hdf", "--quiet"], full / "rg.hdf"),
        ([*cr, "-o", full / "c.hdf"], full / "c.hdf"),
        ([*cr, "-o", full / "cs.hdf", "--save-g2-pixel"], full / "cs_G2.hdf"),
        (["fit", a, "-o", full / "f.json", "--quiet"], full / "f.json"),
        (["fit", a, "-o", full / "f.h5", "--quiet"], full / "f.h5"),
        (["export", a, "--plot", "saxs2d", "-o", figs, "--quiet"], figs / "in_a_saxs2d.png"),
        (["snapshot", a, "--tab", "saxs2d", "-o", full / "s.png"], full / "s.png"),
    ):
        target.write_bytes(b"the old output")
        runs.append(Run("24.2 full disk", [*args, "--overwrite"] if args[0] != "correlate"
                        else args, (1, 3), [a, b, res_p, side, raw_good, qmap_good, target],
                        must=(target.name, "cannot write"), limit=1024))
    # item 4: Ctrl-C early (own processes)
    for how in ("importint", *(f"sigint:{d}" for d in (0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5,
                                                        0.7))):
        # -2: the signal came before Python's start-up installed any handler
        runs.append(Run("24.4 Ctrl-C early", ["fit", good, "--quiet"], (130, -2), [good],
                        process=how, must=() if how != "importint" else ("interrupted",)))
    # item 5
    zero_mask = work / "zero_mask.hdf"
    with h5py.File(zero_mask, "w") as f:
        f["mask"] = np.zeros(shape, np.uint8)
    raw_npy = shutil.copyfile(raw_good, work / "frames.npy")
    g5 = "24.5 exits and messages"
    runs += [
        Run(g5, ["regroup", stack, "--mask", zero_mask, "-o", o(".hdf"), "--quiet"], (3,),
            [stack, zero_mask], must=("zero_mask.hdf",)),
        Run(g5, ["fit", good, "--q-range", "5", "6", "--quiet"], (2,), [good],
            must_not=("TypeError",)),
        Run(g5, ["fit", good, "--temperature", "nan", "--viscosity", "1e-3", "-o", o(".json"),
                 "--quiet"], (2,), [good]),
        Run(g5, ["fit", good, "--temperature", "-5", "--viscosity", "0", "--quiet"], (2,),
            [good]),
        Run(g5, ["fit", good, "-o", out / "nodir" / "x.json", "--quiet"], (0,), [good]),
        Run(g5, ["correlate", raw_npy, "--qmap", qmap_good, "-o", o(".hdf"), *corr], (0,),
            [raw_npy, qmap_good]),
        Run(g5, ["correlate", raw_good, raw_npy, "--qmap", qmap_good, "-o", out / "o_c.hdf",
                 *corr], (2,), [raw_good, raw_npy, qmap_good]),
        Run(g5, ["info", root / "missing" / "x.hdf"], (3,), []),
    ]
    # item 6
    frames = h5py.File(raw_good, "r")["/entry/data/data"][()].astype(np.float32)
    frames[:, np.random.default_rng(3).random(shape) < 0.01] = np.nan
    raw_nan = work / "raw_nan.h5"
    with h5py.File(raw_nan, "w") as f:
        f["/entry/data/data"] = frames
    g6 = "24.6 raw frames"
    runs += [
        Run(g6, ["correlate", raw_nan, "--qmap", qmap_good, "-o", o(".hdf"), *corr], (0,),
            [raw_nan, qmap_good], must=("NaN or Inf counts were masked",)),
        Run(g6, ["correlate", raw_good, "--qmap", qmap_good, "-o", o(".hdf"), *corr,
                 "--begin-frame", "-50"], (2,), [raw_good, qmap_good]),
        Run(g6, ["correlate", raw_good, "--qmap", qmap_good, "-o", o(".hdf"), *corr,
                 "--begin-frame", "63"], (3,), [raw_good, qmap_good]),
        Run(g6, ["correlate", raw_good, "--qmap", qmap_good, "-o", o(".hdf"), *corr,
                 "--begin-frame", "63", "--mode", "twotime"], (3,), [raw_good, qmap_good]),
    ]
    # item 7 (with the writing window of real use)
    g7 = "24.7 being written"
    killed = shutil.copyfile(good, work / "killed_results.hdf")
    subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
        import os, h5py
        f = h5py.File({os.fspath(killed)!r}, "a")
        f.attrs["touched"] = 1
        f.flush()
        os._exit(0)
    """)], check=True)
    cut = work / "cut_results.hdf"
    data = good.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    future = work / "future_results.hdf"
    future.write_bytes(data[: len(data) // 2])
    ft = time.time() + 3600
    os.utime(future, (ft, ft))
    w60 = {"XPCSVIEWER_WRITING_WINDOW_S": "60"}
    runs += [
        Run(g7, ["info", killed], (0,), [killed], env=w60),
        Run(g7, ["info", cut], (3,), [cut], env=w60, must_not=("being written",)),
        Run(g7, ["info", future], (3,), [future], env=w60,
            must_not=("being written", "s ago")),
    ]
    # item 8: the dashboard's port taken
    runs.append(Run("24.8 Dask quiet", ["info", good, good2, "--workers", "2", "--quiet"],
                    (0,), [good, good2], must_not=("8787", "Traceback", "warn")))
    # item 9
    nan = next(c.path for c in degenerate if c.name == "g2_all_nan")
    runs.append(Run("24.9 average all-NaN", ["average", good, nan, "-o", o(".hdf"),
                                             "--no-reject"], (0,), [good, nan],
                    must=("g2 has no valid point",)))
    # per-pixel G2 side files among the inputs
    for args in (["fit", res_p, side, "--quiet"], ["average", res_p, side, "-o", o(".hdf"),
                                                   "--quiet"],
                 ["export", res_p, side, "--plot", "saxs2d", "-o", o("_figs"), "--quiet"]):
        runs.append(Run("side files as inputs", args, (0,), [res_p, side],
                        must=("skipping",)))
    # issue 34: a FIFO behind a link, VDS source or external storage; data outside the
    # folder; a missing VDS source (a hang is killed after 20 s and counts as a crash)
    always, outside_cases = bc.build_pointer_cases(work / "pointers", good)
    g34 = "34 FIFO, links, VDS, storage"
    for c in always + outside_cases:
        ins = [good] if c.name == "fifo_given" else [good, c.path]  # never read a FIFO
        for args in (["info", c.path], ["fit", good, c.path, "-o", o(".json"), "--quiet"],
                     ["export", good, c.path, "--plot", "g2", "-o", o("_figs"), "--quiet"],
                     ["average", good, c.path, "-o", o(".hdf"), "--quiet"],
                     ["series", good, c.path, "-o", o(".csv"), "--quiet"]):
            runs.append(Run(g34, args, (3,), ins, must=(c.dataset,), timeout=20))
    for c in outside_cases:
        runs.append(Run("34 --allow-external", ["info", c.path, "--allow-external"], (0,),
                        [c.path], timeout=20))
    # issue 34: the window started with a hostile or broken session file; it must come
    # up, name the file it ignored, and close on SIGTERM (exit 143)
    for folder in build_session_cases(work / "sessions").values():
        # the session file is the window's own, rewritten at close: no input
        runs.append(Run("34 session files", [], (143,), [],
                        env={"XPCSVIEWER_CONFIG_DIR": os.fspath(folder)},
                        must=("session.json",), process="window", timeout=120))
    # and the window's close leaves what is not a regular file alone
    runs[-1].must = ("session.json", "not a regular file")
    # issue 50 (readers): wrapped sums, a stray word or event, impossible times, damaged
    # words; each refused (exit 3) within 30 s naming the file, the word or dataset
    spec = importlib.util.spec_from_file_location("xpcs_corpus_table_br", HERE / "bad_readers.py")
    br = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = br
    spec.loader.exec_module(br)
    for args, words in br.reader_runs(work / "readers", qmap_good):
        ins = [a for a in args[1:] if isinstance(a, Path) and a.exists()]
        runs.append(Run("50 sparse readers", args, (3,), ins, must=words, timeout=30))
    runs += _issue50_more(work, good, stack, o)
    return runs


def _issue50_more(work: Path, good: Path, stack: Path, o: Any) -> list[Run]:
    """Issue 50, items 4, 6 and 8: our small files, unusable per-pixel stacks, a file
    name matplotlib would parse."""
    import h5py
    import numpy as np

    runs: list[Run] = []
    d = work / "issue50"
    d.mkdir(parents=True, exist_ok=True)
    profiles = {"null": "null", "list": "[1, 2]", "nested": "[" * 100_000 + "]" * 100_000,
                "rate0": '{"version": 1, "costs": {"multitau": {"gpu": {"bytes_per_s": 0}}}}',
                "nan": '{"version": 1, "costs": {"lsq": {"cpu": {"compile_s": NaN}}}}'}
    for name, text in profiles.items():
        prof = d / f"profile_{name}.json"
        prof.write_text(text)
        env = {"XPCS_DEVICE_PROFILE": os.fspath(prof)}
        runs.append(Run("50 small files", ["device"], (0,), [prof], env=env,
                        must=(prof.name,)))
        runs.append(Run("50 small files", ["fit", good, "-o", o(".json"), "--quiet"], (0,),
                        [good, prof], env=env, must_not=("good_results",)))
    edits = {"nan": lambda a: np.full_like(a, np.nan),
             "zero_ip_if": lambda a: np.concatenate([a[:, :1], 0 * a[:, 1:]], axis=1),
             "int32": lambda a: (a * 1000).astype(np.int32),
             "small": lambda a: a[:, :, :-1, :-1]}
    for name, edit in edits.items():
        bad = shutil.copyfile(stack, d / f"stack_{name}_results.hdf")
        with h5py.File(bad, "r+") as f:
            key = "/xpcs/multitau/unnormalized_G2"
            a = edit(f[key][()])
            del f[key]
            f[key] = a
        runs.append(Run("50 per-pixel stacks", ["regroup", bad, "-o", o(".hdf"), "--quiet"],
                        (3,), [bad], must=(bad.name, "unnormalized_G2")))
        runs.append(Run("50 per-pixel stacks", ["audit", bad, "-o", o(".csv"), "--quiet"],
                        (3,), [bad], must=(bad.name,)))
    odd = shutil.copyfile(good, d / "A$x{1$b_results.hdf")
    for plot in ("g2", "saxs1d"):
        runs.append(Run("50 names as written", ["export", odd, "--plot", plot, "--format",
                                                "svg", "-o", o("_figs"), "--quiet"], (0,),
                        [odd], must_not=("cannot be drawn",)))
    runs.append(Run("50 names as written", ["report", odd, "-o", o(".html"), "--quiet"], (0,),
                    [odd], must_not=("not drawn",)))
    return runs


def build_session_cases(root: Path) -> dict[str, Path]:
    """Config folders, each with a hostile or broken ``session.json``."""
    cases = {
        "nested": "[" * 200_000 + "]" * 200_000,
        "long_int": '{"recent_folders": ' + "9" * 5000 + "}",
        "wrong_types": json.dumps({"recent_folders": 5, "geometry": [1, 2],
                                   "window_state": {"a": None}, "panels": "x",
                                   "files": [[1], {"b": 2}], "browser": 7}),
        "binary": "\x00\xff\xfe garbage \x89HDF",
        "not_object": "[1, 2, 3]",
        "huge": '{"recent_folders": ["' + "a" * (8 << 20) + '"]}',
    }
    out = {}
    for name, text in cases.items():
        d = root / name
        d.mkdir(parents=True)
        (d / "session.json").write_text(text, encoding="utf-8", errors="surrogateescape")
        out[name] = d
    d = root / "folder"
    (d / "session.json").mkdir(parents=True)
    out["folder"] = d
    d = root / "fifo"
    d.mkdir(parents=True)
    os.mkfifo(d / "session.json")
    out["fifo"] = d
    return out


# ---------------------------------------------------------------------- driving
class Child:
    """A child process running command lines on the code under test."""

    def __init__(self, env: dict, limit: int, cwd: Path) -> None:
        cmd = [sys.executable, os.fspath(Path(__file__).resolve()), "--child"]
        if limit:  # every write past ``limit`` bytes fails (EFBIG), as on a full disk
            cmd = [sys.executable, "-c", textwrap.dedent("""
                import os, resource, signal, sys
                n = int(sys.argv[1])
                resource.setrlimit(resource.RLIMIT_FSIZE, (n, n))
                signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
                os.execv(sys.argv[2], sys.argv[2:])
            """), str(limit), *cmd]
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=env, cwd=cwd, text=True)

    def run(self, run: Run, timeout: float) -> dict | None:
        """The child's answer, or None when it died (or hung and was killed)."""
        job = {"args": [os.fsencode(os.fspath(a)).hex() for a in run.args], "env": run.env}
        try:
            self.proc.stdin.write(json.dumps(job) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            return None
        import selectors

        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            self.proc.kill()
            return None
        line = self.proc.stdout.readline()
        return json.loads(line) if line.startswith("{") else None

    def close(self) -> int | None:
        with contextlib.suppress(Exception):
            self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


def _window(run: Run, env: dict, cwd: Path) -> dict:
    """The window started as a user does, closed by SIGTERM once it is up."""
    ready = Path(tempfile.mkdtemp(prefix="xpcs-ready-")) / "ready"
    env = {**env, "XPCSVIEWER_READY_FILE": os.fspath(ready), "XPCS_GUI_WARMUP": "0"}
    p = subprocess.Popen([sys.executable, "-m", "xpcsviewer", *map(os.fspath, run.args)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd,
                         text=True)
    t0 = time.monotonic()
    while not ready.exists() and p.poll() is None and time.monotonic() - t0 < run.timeout:
        time.sleep(0.2)
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
    try:
        out, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        return {"rc": None, "stderr": err, "stdout": out, "escaped": None}
    return {"rc": p.returncode, "stderr": err, "stdout": out, "escaped": None}


def _own_process(run: Run, env: dict, cwd: Path) -> dict:
    args = [os.fspath(a) for a in run.args]
    if run.process == "window":
        return _window(run, env, cwd)
    if run.process == "importint":
        code = textwrap.dedent(f"""
            import os, runpy, signal, sys
            class Interrupt:
                def find_spec(self, name, path=None, target=None):
                    if name == "xpcsviewer.cli":
                        os.kill(os.getpid(), signal.SIGINT)
                    return None
            sys.meta_path.insert(0, Interrupt())
            sys.argv = ["xpcsviewer", *{args!r}]
            runpy.run_module("xpcsviewer", run_name="__main__", alter_sys=True)
        """)
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=env, cwd=cwd, timeout=300)
        return {"rc": p.returncode, "stderr": p.stderr, "stdout": p.stdout, "escaped": None}
    delay = float(run.process.split(":")[1])
    p = subprocess.Popen([sys.executable, "-m", "xpcsviewer", *args], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env, cwd=cwd, text=True)
    time.sleep(delay)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=300)
    return {"rc": p.returncode, "stderr": err, "stdout": out, "escaped": None}


def measure(runs: list[Run], code: Path, work: Path, timeout: float = 300) -> list[Outcome]:
    env = {**os.environ, "PYTHONPATH": os.fspath(code), "QT_QPA_PLATFORM": "offscreen",
           "JAX_PLATFORMS": "cpu", "XPCSVIEWER_WRITING_WINDOW_S": "0"}
    taken = socket.socket()
    taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    with contextlib.suppress(OSError):  # the dashboard's default port is taken
        taken.bind(("127.0.0.1", 8787))
        taken.listen()
    children: dict[int, Child] = {}
    outcomes = []
    for i, run in enumerate(runs):
        before = {os.fspath(p): _fp(Path(p)) for p in run.inputs}
        temps_before = set(work.rglob("*.tmp"))
        if run.process:
            r = _own_process(run, {**env, **run.env}, work)
        else:
            ch = children.get(run.limit) or children.setdefault(run.limit,
                                                                Child(env, run.limit, work))
            r = ch.run(run, run.timeout or timeout)
            if r is None:  # died: a crash (or a hang we ended)
                rc = ch.close()
                children.pop(run.limit)
                r = {"rc": rc, "stderr": ch.proc.stderr.read()[-3000:] if ch.proc.stderr
                     else "", "stdout": "", "escaped": None}
        after = {os.fspath(p): _fp(Path(p)) for p in run.inputs}
        modified = sum(before[k] != after[k] for k in before)
        temps = len(set(work.rglob("*.tmp")) - temps_before)
        text = r["stderr"] + r.get("stdout", "")
        # killed by a signal; SIGINT/SIGTERM before Python's own start-up ends is no crash
        crash = r["rc"] is None or (r["rc"] < 0 and -r["rc"] not in (2, 15))
        tb = bool(r["escaped"]) or "Traceback" in r["stderr"]
        clean = (not crash and not tb and r["rc"] in run.expect and not modified
                 and not temps and all(w in text for w in run.must)
                 and not any(w in text for w in run.must_not))
        outcomes.append(Outcome(r["rc"], text, tb, crash, modified, temps, clean))
        print(f"{i + 1}/{len(runs)} {run.group}: {' '.join(map(str, run.args))[:120]} -> "
              f"{r['rc']}{' CLEAN' if clean else ' NOT CLEAN'}", file=sys.stderr, flush=True)
    for ch in children.values():
        ch.close()
    taken.close()
    return outcomes


def table(runs: list[Run], outcomes: list[Outcome]) -> str:
    groups: dict[str, list[int]] = {}
    for i, r in enumerate(runs):
        groups.setdefault(r.group, []).append(i)
    head = ("group", "runs", "clean", "tracebacks", "crashes", "inputs modified",
            "outputs over inputs", "temporaries left")
    rows = []
    for g, idx in [*groups.items(), ("total", list(range(len(runs))))]:
        oc = [outcomes[i] for i in idx]
        rows.append((g, len(oc), sum(o.clean for o in oc), sum(o.traceback for o in oc),
                     sum(o.crash for o in oc), sum(o.modified for o in oc),
                     sum(o.modified > 0 for o in oc), sum(o.temps for o in oc)))
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(map(str, r)) + " |" for r in rows]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--code", default=os.fspath(REPO), help="checkout whose code runs")
    ap.add_argument("--work", default=None, help="folder for the corpus (default: temporary)")
    ap.add_argument("--only", default=None, help="run only the groups containing this text")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        return _child()
    work = Path(a.work) if a.work else Path(tempfile.mkdtemp(prefix="xpcs-corpus-"))
    runs = build_runs(work)
    if a.only:
        runs = [r for r in runs if a.only in r.group]
    outcomes = measure(runs, Path(a.code).resolve(), work)
    for r, o in zip(runs, outcomes, strict=True):
        if not o.clean:
            where = [ln.strip() for ln in o.text.splitlines() if ln.strip().startswith("File ")]
            print(f"not clean: [{r.group}] {' '.join(map(str, r.args))[:160]} {r.process or ''}"
                  f" -> rc {o.rc}: {o.text.strip().splitlines()[-1:] if o.text.strip() else ''}"
                  + (f" (traceback ends in {where[-1][:120]})" if where else ""))
    print(table(runs, outcomes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
