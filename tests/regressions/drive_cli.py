"""Run many ``xpcsviewer`` command lines in ONE subprocess (the corpus is large).

Usage: ``python drive_cli.py ARGS.json``, where the file holds a list of argument
lists (strings; a file name with bytes that are not UTF-8 is given as
``{"fsencoded": "<hex>"}``). Prints one JSON object per command on stdout:
``{"rc": int, "stderr": str, "escaped": str | null}``, ``escaped`` being the
traceback of an exception that got out of ``main`` (there must be none).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import traceback


def _arg(a):
    if isinstance(a, dict):
        return os.fsdecode(bytes.fromhex(a["fsencoded"]))
    return a


def main() -> int:
    from xpcsviewer.cli import main as cli_main

    with open(sys.argv[1], encoding="utf-8") as fh:
        runs = json.load(fh)
    for args in runs:
        err = io.StringIO()
        escaped = None
        rc = None
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                rc = cli_main([_arg(a) for a in args])
            except SystemExit as exc:
                rc = exc.code if isinstance(exc.code, int) else 2
            except BaseException:  # recorded, the test fails on it
                escaped = traceback.format_exc()
        print(
            json.dumps({"rc": rc, "stderr": err.getvalue(), "escaped": escaped}),
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
