"""What a reconcile returns (`Outcome`), what a cleanup step returns (`Cleanup`), and how it fails."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Iterable, Mapping, Optional, Union

from .objects import in_cluster

#: Seconds (int or float) or a `timedelta`; the host counts in milliseconds.
Delay = Union[int, float, timedelta]


def _child(manifest: Mapping[str, Any]) -> dict:
    """A copy of a desired child, keeping the cluster it belongs in (`in_cluster`)."""
    cluster = getattr(manifest, "cluster", None)
    return dict(manifest) if cluster is None else in_cluster(cluster, manifest)


def to_millis(delay: Delay) -> int:
    """Milliseconds for the WIT `u64`; negative delays are a plugin bug, so they raise."""
    seconds = delay.total_seconds() if isinstance(delay, timedelta) else float(delay)
    if seconds < 0:
        raise ValueError(f"a requeue delay cannot be negative: {delay!r}")
    return round(seconds * 1000)


@dataclass
class Outcome:
    """The level the cluster should be held at: children, status and when to look again.

    Build it fluently, as in the Rust SDK::

        return Outcome.apply([cm, deploy, svc]).status({"ready": True}).requeue_after(30)

    `requeue` is `"done"`, `"now"` or a number of milliseconds.
    """

    children: list = field(default_factory=list)
    desired_status: Optional[dict] = None
    requeue: Union[str, int] = "done"

    @classmethod
    def apply(cls, children: Iterable[Mapping[str, Any]]) -> "Outcome":
        """Hold exactly these children; any other child the parent controls is deleted."""
        return cls(children=[_child(c) for c in children])

    def status(self, status: Mapping[str, Any]) -> "Outcome":
        """Set the desired `status` of the parent."""
        self.desired_status = dict(status)
        return self

    def requeue_after(self, delay: Delay) -> "Outcome":
        """Reconcile again after `delay` (seconds or a timedelta) even without a change."""
        self.requeue = to_millis(delay)
        return self

    def requeue_now(self) -> "Outcome":
        """Reconcile again as soon as the host's hot-loop guard allows."""
        self.requeue = "now"
        return self


@dataclass
class Cleanup:
    """The result of one `finalize` step: done, or not yet.

    A step may also act (contract 0.3.0): ``Cleanup.apply([deploy]).status({...})`` holds
    exactly these children (and that status) while the finalizer is held, applied and pruned as
    a reconcile's are, and ``.finalized()`` lets the parent go once they are written::

        step = Cleanup.apply([scaled_to_zero])
        return step.finalized() if no_replica_left else step

    `requeue` (while not done) is `"done"` (at the next change), `"now"` or milliseconds;
    `children` is `None` when the step leaves the children as they are.
    """

    is_complete: bool = False
    requeue: Union[str, int] = "done"
    children: Optional[list] = None
    desired_status: Optional[dict] = None

    @classmethod
    def complete(cls) -> "Cleanup":
        """Cleanup is done; the host removes its finalizer."""
        return cls(is_complete=True)

    @classmethod
    def again_after(cls, delay: Delay) -> "Cleanup":
        """Not done yet; call `finalize` again after `delay`."""
        return cls(requeue=to_millis(delay))

    @classmethod
    def apply(cls, children: Iterable[Mapping[str, Any]]) -> "Cleanup":
        """Not done yet; hold exactly these children meanwhile (any other child the parent
        controls is deleted). `finalize` runs again at the next change of the parent or a child."""
        return cls(children=[_child(c) for c in children])

    def status(self, status: Mapping[str, Any]) -> "Cleanup":
        """Set the desired `status` of the parent while it is cleaned up."""
        self.desired_status = dict(status)
        return self

    def finalized(self, done: bool = True) -> "Cleanup":
        """Done (or, with `False`, not yet): the host removes its finalizer once this step's
        children and status are written."""
        self.is_complete = done
        return self

    def requeue_after(self, delay: Delay) -> "Cleanup":
        """While not done, call `finalize` again after `delay` even without a change."""
        self.requeue = to_millis(delay)
        return self

    @property
    def again_after_ms(self) -> Optional[int]:
        """The delay of `again_after`, or `None` when done or waiting for a change."""
        return self.requeue if not self.is_complete and isinstance(self.requeue, int) else None


class ReconcileError(Exception):
    """A failed reconcile; raise `TransientError` or `PermanentError` rather than this."""

    kind = "transient"

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class TransientError(ReconcileError):
    """Retrying may help: the host retries with exponential backoff."""

    kind = "transient"


class PermanentError(ReconcileError):
    """Retrying will not help until the parent changes (an invalid spec, ...).

    The host reports the message on the parent's status and waits for a change.
    """

    kind = "permanent"
