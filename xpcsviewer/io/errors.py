"""Errors for bad input files: each names the file, the dataset and what was expected."""

from __future__ import annotations

from pathlib import Path

from xpcsviewer.model.text import display_path  # the errors name paths with it


def one_line(text: str) -> str:
    """``text`` on one line: control characters (a newline in a file name) are
    shown escaped (``\\n``), so a message is always exactly one line."""
    if text.isprintable():
        return text
    return "".join(
        c if c.isprintable() or c == " " else c.encode("unicode_escape").decode("ascii")
        for c in text
    )


__all__ = ["FileBeingWrittenError", "XpcsFileError", "display_path", "one_line"]


class XpcsFileError(Exception):
    """A file that cannot be read as expected.

    Parameters
    ----------
    path : str or Path
        The file.
    problem : str
        What is wrong, in words a user understands ("truncated or not HDF5").
    dataset : str, optional
        The HDF5 path concerned.
    expected : str, optional
        What was expected there ("float array of shape (T, Nd)").
    """

    #: A structural gap (a missing dataset, data never written): in a file
    #: modified moments ago this means the file is still being written.
    incomplete = False
    #: Reading again later may succeed (the file is being written).
    retry = False

    def __init__(
        self,
        path: str | Path,
        problem: str,
        dataset: str | None = None,
        expected: str | None = None,
    ) -> None:
        self.path = display_path(path)
        self.problem = problem
        self.dataset = dataset
        self.expected = expected
        super().__init__(self.one_line())

    def one_line(self) -> str:
        """``FILE: DATASET: problem (expected ...)`` on one line."""
        parts = [self.path]
        if self.dataset:
            parts.append(self.dataset)
        msg = ": ".join(parts) + f": {self.problem}"
        if self.expected:
            msg += f" (expected {self.expected})"
        return one_line(msg)


class FileBeingWrittenError(XpcsFileError):
    """A file another program is still writing: retry when it is complete.

    Raised for files open for writing (HDF5 consistency flags, SWMR) and for
    recently modified files that lack required data. The GUI's watched folder
    retries these files when they change.
    """

    retry = True
