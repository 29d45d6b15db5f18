"""Errors for bad input files: each names the file, the dataset and what was expected."""

from __future__ import annotations

from pathlib import Path

__all__ = ["XpcsFileError"]


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

    def __init__(
        self,
        path: str | Path,
        problem: str,
        dataset: str | None = None,
        expected: str | None = None,
    ) -> None:
        self.path = str(path)
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
        return msg
