"""The run configuration: which backend and device a job uses, as a value.

A :class:`RunConfig` is made once from the command-line flags or the GUI's Tools menu
(environment variables give only the defaults) and handed to each job: the command
line runs its command under it, the GUI's task runner runs each job under the one
current when the job was submitted, and batch tasks carry it to their Dask workers.
Inside a job, :func:`current_config` is what ``get_backend()`` and
``resolve_device("auto", work)`` consult. Nothing writes ``os.environ`` to choose a
device, and a job never sees a choice made after it started.
"""

from __future__ import annotations

import contextvars
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = ["RunConfig", "current_config", "use_config"]

_BACKENDS = ("auto", "jax", "numpy")


@dataclass(frozen=True)
class RunConfig:
    """Backend, device and routing threshold of a job (frozen, picklable).

    Attributes
    ----------
    backend : {"auto", "jax", "numpy"}
        "auto": JAX when importable (the DeviceManager's choice), else NumPy.
    device : {"auto", "cpu", "gpu"}
        "auto" routes each job by its work score; "gpu" falls back to the CPU when
        none is visible (unless ``XPCS_GPU_FALLBACK=false``).
    threshold : int or None
        Work score from which "auto" sends a job to an accelerator; None: the
        measured default (``DEFAULT_DEVICE_THRESHOLD``).
    """

    backend: str = "auto"
    device: str = "auto"
    threshold: int | None = None

    def __post_init__(self) -> None:
        from xpcsviewer.backends.device import parse_device

        if self.backend not in _BACKENDS:
            raise ValueError(f"backend {self.backend!r}: use auto, jax or numpy")
        dev = parse_device(self.device)
        if not isinstance(dev, str):
            raise ValueError(f"device {self.device!r}: use auto, cpu or gpu")
        object.__setattr__(self, "device", dev)
        if self.threshold is not None and (not isinstance(self.threshold, int)
                                           or self.threshold < 0):
            raise ValueError(f"threshold {self.threshold!r} must be an integer >= 0")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, *, backend: str | None = None,
                 device: str | None = None, threshold: int | None = None) -> RunConfig:
        """Given values win; ``XPCS_USE_JAX``, ``XPCS_DEVICE`` / ``XPCS_USE_GPU`` and
        ``XPCS_DEVICE_THRESHOLD`` fill in the rest.

        Raises
        ------
        ValueError
            A value (given or from the environment) that names nothing.
        """
        from xpcsviewer.backends.device import DEFAULT_DEVICE_THRESHOLD, _Settings

        s = _Settings.from_env(os.environ if env is None else env)
        env_backend = {"auto": "auto", "true": "jax", "false": "numpy"}[s.use_jax]
        thr = s.threshold if s.threshold != DEFAULT_DEVICE_THRESHOLD else None
        return cls(backend=backend if backend is not None else env_backend,
                   device=device if device is not None else s.device,
                   threshold=threshold if threshold is not None else thr)

    def routing_threshold(self) -> int:
        """The threshold in force (the default where none is set)."""
        from xpcsviewer.backends.device import DEFAULT_DEVICE_THRESHOLD

        return DEFAULT_DEVICE_THRESHOLD if self.threshold is None else self.threshold


_CURRENT: contextvars.ContextVar[RunConfig | None] = contextvars.ContextVar(
    "xpcsviewer_run_config", default=None)


def current_config() -> RunConfig:
    """The configuration of the job running in this context; outside any job, the
    defaults from the environment."""
    cfg = _CURRENT.get()
    return cfg if cfg is not None else RunConfig.from_env()


@contextmanager
def use_config(config: RunConfig | None) -> Iterator[RunConfig]:
    """Run the block under ``config`` (None: the current one); restored after."""
    cfg = current_config() if config is None else config
    token = _CURRENT.set(cfg)
    try:
        yield cfg
    finally:
        _CURRENT.reset(token)
