// The component glue: adapts a `Reconciler` to the shapes componentize-js exchanges with the host
// (contract 0.4.0).
//
// componentize-js maps WIT records to objects with camelCase fields, variants
// to `{ tag, val }`, `u64` to BigInt, enums to strings, and a `result` to
// `{ tag: 'ok' | 'err', val }`. Only this module knows those shapes.

import { awaited } from './awaited.js';
import * as logging from './log.js';
import { clusterOf } from './objects.js';
import { ReconcileError } from './outcome.js';

/**
 * @param {import('./objects.js').Kind} k
 */
const kind = (k) => ({ group: k.group, version: k.version, kind: k.kind, plural: k.plural, namespaced: k.namespaced });

/** Kubernetes' operator names to the WIT enum's cases. */
const OPERATOR_CASES = { In: 'in', NotIn: 'not-in', Exists: 'exists', DoesNotExist: 'does-not-exist' };

/**
 * A selection in WIT shape (variant `selector` as `{ tag, val }`, `match-labels` as pairs).
 * @param {import('./selection.js').Selection} s
 */
function selection(s) {
  const selector =
    s.name !== undefined
      ? { tag: 'name', val: s.name }
      : {
          tag: 'labels',
          val: {
            matchLabels: (s.labels?.matchLabels ?? []).map(([k, v]) => [k, v]),
            matchExpressions: (s.labels?.matchExpressions ?? []).map((r) => ({ key: r.key, operator: OPERATOR_CASES[r.operator], values: [...r.values] })),
          },
        };
  return { apiVersion: s.apiVersion, kind: s.kind, namespace: s.namespace, cluster: s.cluster, selector };
}

/**
 * The WIT `reconcile-error` for a thrown value. A plugin bug (anything but a
 * `ReconcileError`) is reported as transient, with its stack in the log,
 * rather than trapping the instance. Running out of memory is rethrown, so
 * the component traps as a Rust guest would and the host reports the
 * sandbox's limit instead of a plugin answer.
 * @param {unknown} e
 */
function failure(e) {
  if (e instanceof ReconcileError) return { tag: 'err', val: { kind: e.kind, message: e.message } };
  if (isOutOfMemory(e)) throw e;
  const err = e instanceof Error ? e : new Error(String(e));
  logging.error(err.stack ?? String(err));
  return { tag: 'err', val: { kind: 'transient', message: `${err.name}: ${err.message}` } };
}

/**
 * SpiderMonkey reports exhaustion as the string "out of memory" (or an
 * InternalError saying so) rather than a dedicated type.
 * @param {unknown} e
 */
function isOutOfMemory(e) {
  const text = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
  return /out of memory/i.test(text);
}

/**
 * The `describe` / `selectRelated` / `reconcile` / `finalize` exports serving `reconciler`
 * (`selectRelated` is the contract's `select-related`, which calls `reconciler.select`), with
 * logs sent to `hostLog` (the world's `log` import). `options.crd`, if given,
 * is reported by `describe` instead of `reconciler.crd` (the build command's
 * `--crd FILE` embeds a file this way: a component cannot read files).
 * @param {import('./reconciler.js').Reconciler} reconciler
 * @param {(level: string, message: string) => void} hostLog
 * @param {{ crd?: string }} [options]
 */
export function exportReconciler(reconciler, hostLog, options = {}) {
  logging.setSink(hostLog);
  return {
    describe() {
      const r = reconciler;
      if (!r.parent) throw new Error(`${r.constructor.name} does not declare its parent kind`);
      return {
        name: r.name,
        version: r.version,
        parent: kind(r.parent),
        children: r.children.map(kind),
        related: r.related.map(kind),
        finalizer: r.finalizer,
        crd: options.crd ?? r.crd,
      };
    },

    // Each export answers synchronously for a synchronous hook, and with a Promise (which
    // componentize-js runs the event loop to settle) for an async one.

    /** @param {string} parent */
    selectRelated(parent) {
      return settled(() => reconciler.handleSelect(parent), (found) => ({ tag: 'ok', val: found.map(selection) }));
    },

    /** @param {{parent: string, cluster: string, children: Observed[], related: Observed[]}} request */
    reconcile(request) {
      return settled(
        () => reconciler.handleReconcile(request.parent, request.children, request.related, request.cluster),
        (outcome) => {
          const children = outcome.children.map(desired);
          return { tag: 'ok', val: { children, status: statusText(outcome.desiredStatus), requeue: requeue(outcome.requeue) } };
        },
      );
    },

    /** @param {{parent: string, cluster: string, children: Observed[], related: Observed[], finalizer: string}} request */
    finalize(request) {
      return settled(
        () => reconciler.handleFinalize(request.parent, request.children, request.finalizer, request.related, request.cluster),
        (cleanup) => {
          const children = cleanup.children?.map(desired);
          const val = { children, status: statusText(cleanup.desiredStatus), finalized: cleanup.isComplete, requeue: requeue(cleanup.requeue) };
          return { tag: 'ok', val };
        },
      );
    },
  };
}

/** @typedef {{cluster: string, object: string}} Observed the WIT `observed`: an object and its cluster */

/**
 * The WIT `desired`: a child's JSON and the cluster it names (`undefined`: the parent's).
 * @param {object} child
 */
const desired = (child) => ({ cluster: clusterOf(child), object: JSON.stringify(child) });

/** @param {object | undefined} status the WIT `option<string>` of a desired status */
const statusText = (status) => (status === undefined ? undefined : JSON.stringify(status));

/** @param {'done' | 'now' | number} r the WIT variant `requeue` */
const requeue = (r) => (r === 'done' || r === 'now' ? { tag: r } : { tag: 'after', val: BigInt(r) });

/**
 * The WIT `result` of a call: `answer(value)` once `call()`'s value is known
 * (awaited if it is a Promise), or the `reconcile-error` for what it threw or rejected with.
 * @template T
 * @param {() => T | Promise<T>} call
 * @param {(value: T) => { tag: 'ok', val: unknown }} answer
 */
function settled(call, answer) {
  try {
    return awaited(call(), answer, failure);
  } catch (e) {
    return failure(e);
  }
}
