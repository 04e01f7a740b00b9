"""The component glue: adapts a `Reconciler` to componentize-py's generated `wit_world` (contract 0.3.0).

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
        return types.Selection(s.api_version, s.kind, s.namespace, selector)

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
                outcome = reconciler.handle_reconcile(request.parent, request.children, getattr(request, "related", ()))
                children = [encode(c) for c in outcome.children]
                status = None if outcome.desired_status is None else encode(outcome.desired_status)
            except MemoryError:
                raise  # the sandbox's limit, not a plugin answer: let the host see it as such
            except Exception as e:
                raise failure(e) from None
            return types.ReconcileResponse(children, status, requeue(outcome.requeue))

        def finalize(self, request: Any) -> Any:
            try:
                cleanup = reconciler.handle_finalize(request.parent, request.children, request.finalizer, getattr(request, "related", ()))
            except MemoryError:
                raise  # as in reconcile
            except Exception as e:
                raise failure(e) from None
            try:
                children = None if cleanup.children is None else [encode(c) for c in cleanup.children]
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
