"""Logging through the host's `log` import, or Python's `logging` when run natively.

Inside a component the host turns each call into a `tracing` event in the
span of the running reconcile; in native tests the same calls land in the
`weir_reconciler` logger so they can be seen with `-v` or asserted with
`assertLogs`.
"""

from __future__ import annotations

import logging
from typing import Callable, Optional

LEVELS = ("trace", "debug", "info", "warn", "error")

_native = logging.getLogger("weir_reconciler")
_PY_LEVELS = {"trace": 5, "debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING, "error": logging.ERROR}

#: Set by the component glue to the host import; `None` means "native".
_sink: Optional[Callable[[str, str], None]] = None


def set_sink(sink: Optional[Callable[[str, str], None]]) -> None:
    """Route log calls to `sink(level, message)`; the component glue installs the host import."""
    global _sink
    _sink = sink


def log(level: str, message: str) -> None:
    """Log `message` at `level` (one of `LEVELS`)."""
    if level not in LEVELS:
        raise ValueError(f"unknown log level {level!r}; expected one of {LEVELS}")
    if _sink is not None:
        _sink(level, message)
    else:
        _native.log(_PY_LEVELS[level], message)


def trace(message: str) -> None:
    log("trace", message)


def debug(message: str) -> None:
    log("debug", message)


def info(message: str) -> None:
    log("info", message)


def warn(message: str) -> None:
    log("warn", message)


def error(message: str) -> None:
    log("error", message)
