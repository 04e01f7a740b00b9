"""The component glue: adapts a `Reconciler` to componentize-py's generated `wit_world` (contract 0.4.0).

Only this module knows the generated binding names; everything else in the
SDK is plain Python. The generated modules are passed in by tests and
imported lazily inside a component, where they exist.
"""

from __future__ import annotations

import traceback
from types import ModuleType
from typing import Any, Optional

from . import log as _log
from .objects import Kind
from .outcome import ReconcileError
from .reconciler import Reconciler, encode
from .selection import Selection


def export(
    reconciler: Reconciler,
    *,
    world: Optional[ModuleType] = None,
    types: Optional[ModuleType] = None,
    err: Optional[type] = None,
    crd: Optional[str] = None,
) -> type:
    """The `WitWorld` class componentize-py instantiates, serving `reconciler`.

    `crd`, if given, is reported by `describe` instead of `reconciler.crd`
    (the build command's `--crd FILE` embeds a file this way). `world`,
    `types` and `err` default to the generated `wit_world`,
    `wit_world.imports.types` and `componentize_py_types.Err`.
    """
    if world is None:
        import wit_world as world  # type: ignore[import-not-found,no-redef]
    if types is None:
        from wit_world.imports import types  # type: ignore[import-not-found,no-redef]
    if err is None:
        from componentize_py_types import Err as err  # type: ignore[import-not-found,no-redef]

    levels = {name: getattr(types.LogLevel, name.upper()) for name in _log.LEVELS}
    _log.set_sink(lambda level, message: world.log(levels[level], message))

    def kind(k: Kind) -> Any:
        return types.ResourceKind(k.group, k.version, k.kind, k.plural, k.namespaced)

    # Contract 0.1.0 (`--wit` pointing at it) has no related objects: a plugin built
    # against it declares none and is never asked to select.
    related_objects = hasattr(types, "Selection")
    # Contract 0.4.0 names the cluster of every object; an older `--wit` names none.
    clusters = hasattr(types, "Desired")
    operator_cases = {"In": "IN", "NotIn": "NOT_IN", "Exists": "EXISTS", "DoesNotExist": "DOES_NOT_EXIST"}

    def selection(s: Selection) -> Any:
        if s.labels is None:
            selector = types.Selector_Name(s.name)
        else:
            requirements = [
                types.LabelRequirement(r.key, getattr(types.SelectorOperator, operator_cases[r.operator]), list(r.values))
                for r in s.labels.match_expressions
            ]
            selector = types.Selector_Labels(types.LabelSelector(list(s.labels.match_labels), requirements))
        if clusters:
            return types.Selection(s.api_version, s.kind, s.namespace, s.cluster, selector)
        return types.Selection(s.api_version, s.kind, s.namespace, selector)

    def observed(request: Any) -> tuple[list, list, Optional[str]]:
        """The request's children and related objects (with their clusters from 0.4.0) and the parent's cluster."""
        related = getattr(request, "related", ())
        if not clusters:
            return list(request.children), list(related), None
        placed = lambda objects: [(o.cluster, o.object) for o in objects]  # noqa: E731
        return placed(request.children), placed(related), request.cluster

    def desired(children: Any) -> list:
        """Desired children in the contract's shape: JSON texts, or (0.4.0) each with the cluster it names."""
        if not clusters:
            return [encode(c) for c in children]
        return [types.Desired(getattr(c, "cluster", None), encode(c)) for c in children]

    def failure(e: Exception) -> BaseException:
        if isinstance(e, ReconcileError):
            error_kind = types.ErrorKind.PERMANENT if e.kind == "permanent" else types.ErrorKind.TRANSIENT
            return err(types.ReconcileError(error_kind, e.message))
        # A bug in the plugin: report it as transient (the host backs off)
        # with the traceback in the log, instead of trapping the instance.
        _log.error("".join(traceback.format_exception(e)))
        return err(types.ReconcileError(types.ErrorKind.TRANSIENT, f"{type(e).__name__}: {e}"))

    class WitWorld(world.WitWorld):  # type: ignore[misc,name-defined]
        def describe(self) -> Any:
            r = reconciler
            children = [kind(c) for c in r.children]
            declared = crd if crd is not None else r.crd
            if not related_objects:
                return types.PluginInfo(r.name, r.version, kind(r.parent), children, r.finalizer, declared)
            related = [kind(c) for c in r.related]
            return types.PluginInfo(r.name, r.version, kind(r.parent), children, related, r.finalizer, declared)

        def select_related(self, parent: str) -> Any:
            try:
                return [selection(s) for s in reconciler.handle_select(parent)]
            except MemoryError:
                raise  # as in reconcile
            except Exception as e:
                raise failure(e) from None

        def reconcile(self, request: Any) -> Any:
            try:
                children_in, related_in, cluster = observed(request)
                outcome = reconciler.handle_reconcile(request.parent, children_in, related_in, cluster)
                children = desired(outcome.children)
                status = None if outcome.desired_status is None else encode(outcome.desired_status)
            except MemoryError:
                raise  # the sandbox's limit, not a plugin answer: let the host see it as such
            except Exception as e:
                raise failure(e) from None
            return types.ReconcileResponse(children, status, requeue(outcome.requeue))

        def finalize(self, request: Any) -> Any:
            try:
                children_in, related_in, cluster = observed(request)
                cleanup = reconciler.handle_finalize(request.parent, children_in, request.finalizer, related_in, cluster)
            except MemoryError:
                raise  # as in reconcile
            except Exception as e:
                raise failure(e) from None
            try:
                children = None if cleanup.children is None else desired(cleanup.children)
                status = None if cleanup.desired_status is None else encode(cleanup.desired_status)
            except MemoryError:
                raise  # as in reconcile
            except Exception as e:
                raise failure(e) from None
            return types.FinalizeResponse(children, status, cleanup.is_complete, requeue(cleanup.requeue))

    def requeue(when: Any) -> Any:
        """The WIT variant `requeue` of `"done"`, `"now"` or milliseconds."""
        if when == "done":
            return types.Requeue_Done()
        if when == "now":
            return types.Requeue_Now()
        return types.Requeue_After(int(when))

    return WitWorld
