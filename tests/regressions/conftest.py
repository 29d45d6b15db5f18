"""The bad-file corpus of issue 11 (built once per session in a temporary folder)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(
        f"xpcs_issue11_{name}", HERE / f"{name}.py"
    )
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


bad_corpus = _load("bad_corpus")


@dataclass
class Corpus:
    """Paths of the corpus; ``inputs`` are every file a command may read."""

    root: Path
    good: Path
    stack_good: Path
    results: list = field(default_factory=list)
    degenerate: list = field(default_factory=list)
    stack_short: object = None
    raw_good: Path | None = None
    raws: list = field(default_factory=list)
    qmap_good: Path | None = None
    qmaps: list = field(default_factory=list)
    masks: list = field(default_factory=list)
    odd: Path | None = None

    def inputs(self) -> list[Path]:
        cases = [
            *self.results,
            *self.degenerate,
            self.stack_short,
            *self.raws,
            *self.qmaps,
            *self.masks,
        ]
        files = [self.good, self.stack_good, self.raw_good, self.qmap_good, self.odd]
        return [p for p in [*files, *(c.path for c in cases)] if p.is_file()]


def fingerprint(paths) -> dict[str, tuple]:
    """Bytes (sha256), size and mtime of every file: inputs must never change."""
    out = {}
    for p in paths:
        st = os.stat(p)
        out[os.fsdecode(p)] = (
            hashlib.sha256(Path(p).read_bytes()).hexdigest(),
            st.st_size,
            st.st_mtime_ns,
        )
    return out


@pytest.fixture(scope="session")
def corpus(tmp_path_factory) -> Corpus:
    root = tmp_path_factory.mktemp("issue11")
    good = bad_corpus.write_good(root / "good_results.hdf")
    stack_good = bad_corpus.write_good(root / "stack_results.hdf", stack=True)
    c = Corpus(root, good, stack_good)
    c.results = bad_corpus.build_result_cases(root / "results", good, stack_good)
    c.degenerate = bad_corpus.build_degenerate(root / "degenerate", good)
    c.stack_short = bad_corpus.build_stack_short(root / "results", stack_good)
    shape = tuple(bad_corpus.SPEC["geometry"]["shape"])
    c.raw_good, c.raws = bad_corpus.build_raw_cases(root / "raw", shape)
    c.qmap_good, c.qmaps = bad_corpus.build_qmap_cases(root / "qmap", good)
    c.masks = bad_corpus.build_mask_cases(root / "mask", shape)
    c.odd = bad_corpus.odd_name_copy(root, good)
    return c


def _jsonable_arg(a) -> object:
    s = os.fspath(a)
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return {"fsencoded": os.fsencode(s).hex()}


#: Sets a file size limit (every write past it fails with EFBIG, as on a full
#: disk), then becomes the command: no ``preexec_fn`` in a threaded pytest.
_LIMITED = (
    "import os, resource, signal, sys; "
    "n = int(sys.argv[1]); resource.setrlimit(resource.RLIMIT_FSIZE, (n, n)); "
    "signal.signal(signal.SIGXFSZ, signal.SIG_IGN); os.execv(sys.argv[2], sys.argv[2:])"
)


def drive(runs: list[list], tmp_path: Path, timeout: float = 600,
          file_size_limit: int | None = None) -> list[dict]:
    """Run command lines through ``drive_cli.py`` in one subprocess; one dict each.

    ``file_size_limit``: bytes a file may have in the child (POSIX). The child must
    exit 0: a crash (a signal) fails the test.
    """
    spec = tmp_path / "runs.json"
    spec.write_text(json.dumps([[_jsonable_arg(a) for a in r] for r in runs]))
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "JAX_PLATFORMS": "cpu"}
    cmd = [sys.executable, str(HERE / "drive_cli.py"), str(spec)]
    if file_size_limit is not None:
        cmd = [sys.executable, "-c", _LIMITED, str(file_size_limit), *cmd]
    proc = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-3000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    out = [
        json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")
    ]
    assert len(out) == len(runs), proc.stdout[-2000:] + proc.stderr[-2000:]
    return out


def cli(args: list, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    """``python -m xpcsviewer ARGS`` in a real process (bytes out, for odd names)."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "JAX_PLATFORMS": "cpu"}
    return subprocess.run(
        [sys.executable, "-m", "xpcsviewer", *map(os.fspath, args)],
        capture_output=True,
        timeout=timeout,
        env=env,
        cwd=cwd,
    )


def qmap_geometry() -> list[str]:
    """``qmap`` options for the corpus detector."""
    h, w = bad_corpus.SPEC["geometry"]["shape"]
    geo = {"shape": f"{h} {w}", "energy": "10", "det-dist": "5",
           "pixel-size": "75e-6", "bcx": "20", "bcy": "15"}  # fmt: skip
    return [a for k, v in geo.items() for a in (f"--{k}", *v.split())]


@pytest.fixture(scope="session")
def issue11():
    """The helpers as a namespace (test modules cannot import a conftest)."""
    from types import SimpleNamespace

    return SimpleNamespace(
        cli=cli,
        drive=drive,
        fingerprint=fingerprint,
        corpus_module=bad_corpus,
        qmap_geometry=qmap_geometry(),
    )
