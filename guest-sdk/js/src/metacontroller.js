// Metacontroller migration: a CompositeController's `sync` (and `customize`, `finalize`) hooks as a Weir plugin.
//
// A function written for Metacontroller's CompositeController webhooks runs
// unchanged; a few lines declare what the CompositeController object declared:
//
//   import { CONFIG_MAP, Kind } from '@weir/guest-sdk';
//   import { compositeController } from '@weir/guest-sdk/metacontroller';
//   import { sync, customize } from './hooks.js'; // the webhook functions, as they were
//
//   export default compositeController({
//     name: 'config-bundle',
//     parent: new Kind('example.weir.dev', 'v1alpha1', 'ConfigBundle', 'configbundles'),
//     children: [CONFIG_MAP],
//     related: [CONFIG_MAP],
//     sync,
//     customize,
//   });
//
// A hook may be `async` (Metacontroller's Node.js hooks usually are): its
// Promise is awaited and what it resolves to is checked as a plain response.
//
// The mapping is the Python SDK's (weir_reconciler/metacontroller.py): the
// `children` and `related` maps key objects as Metacontroller does (`objectKey`:
// v1 hooks, the default, by name in the parent's namespace and `namespace/name`
// elsewhere, so always `namespace/name` under a cluster-scoped parent;
// `hookVersion: 'v2'`, `namespace/name` for every namespaced object); a rule's `namespace` and `namespaceSelector` (which needs
// NAMESPACE declared in `related`) read other namespaces as far as the host's
// policy entry for the plugin allows. The SDK README's "Migrating from
// Metacontroller" says what differs.
import { awaited } from './awaited.js';
import { KubeObject, Objects } from './objects.js';
import { Cleanup, Outcome, PermanentError } from './outcome.js';
import { Reconciler } from './reconciler.js';
import { LabelSelector, Selection } from './selection.js';

/** When a finalize hook answers `finalized: false` without `resyncAfterSeconds`. */
export const FINALIZE_RETRY_SECONDS = 5;

/** @typedef {import('./objects.js').Kind} Kind */
/** @typedef {Record<string, any> | undefined | null} Response */
/** @typedef {(request: Record<string, any>) => Response | Promise<Response>} Hook */

/**
 * Metacontroller's key of a kind in `children` and `related`: `Kind.apiVersion`, e.g. `Deployment.apps/v1`.
 * @param {Kind} kind
 */
export const kindKey = (kind) => `${kind.kind}.${kind.apiVersion}`;

/** The hook versions Metacontroller defines: how `children` and `related` are keyed. */
export const HOOK_VERSIONS = ['v1', 'v2'];

/**
 * The key of `o` in a hook's `children`/`related` map, as Metacontroller keys it. A cluster-scoped
 * object is keyed by its name. A namespaced one is keyed `namespace/name`, except in a v1 hook
 * when it is in the parent's namespace (`parentNamespace`; none for a cluster-scoped parent):
 * then by its name. Metacontroller never hands a namespaced parent's v1 hook an object of another
 * namespace; Weir does when the operator's policy allows the read, and keys it `namespace/name`
 * so that it cannot collide with one of the parent's own namespace.
 * @param {KubeObject} o @param {string | undefined} parentNamespace @param {string} [hookVersion]
 */
export const objectKey = (o, parentNamespace, hookVersion = 'v1') =>
  !o.namespace || (hookVersion === 'v1' && o.namespace === parentNamespace) ? o.name : `${o.namespace}/${o.name}`;

/**
 * The CompositeController a Metacontroller user would have applied, for the hooks' `controller` field.
 * @param {string} name @param {Kind} parent @param {Kind[]} children @param {string[]} hooks @param {string} [hookVersion]
 */
export function controllerObject(name, parent, children, hooks, hookVersion = 'v1') {
  const rule = (/** @type {Kind} */ k) => ({ apiVersion: k.apiVersion, resource: k.plural });
  return {
    apiVersion: 'metacontroller.k8s.io/v1alpha1',
    kind: 'CompositeController',
    metadata: { name },
    spec: { parentResource: rule(parent), childResources: children.map(rule), hooks: Object.fromEntries(hooks.map((h) => [h, { version: hookVersion }])) },
  };
}

/**
 * `Kind.apiVersion` -> key -> object, with an entry for every kind in `kinds` (keys: `objectKey`).
 * @param {Kind[]} kinds @param {Objects} objects @param {string | undefined} parentNamespace @param {string} hookVersion
 */
function objectMap(kinds, objects, parentNamespace, hookVersion) {
  return Object.fromEntries(
    kinds.map((k) => [kindKey(k), Object.fromEntries(objects.ofKind(k).map((o) => [objectKey(o, parentNamespace, hookVersion), plain(o)]))]),
  );
}

/** @param {Kind[]} related @param {string} where */
function namespaceKind(related, where) {
  const k = related.find((r) => r.apiVersion === 'v1' && r.kind === 'Namespace');
  if (k === undefined) throw new PermanentError(`${where}: namespaceSelector reads Namespaces' labels, so declare NAMESPACE in related`);
  return k;
}

/** @param {KubeObject} o */
const plain = (o) => JSON.parse(JSON.stringify(o));

/**
 * The `relatedResources` of a customize response as selections of declared kinds.
 * @param {unknown} rules @param {Kind[]} related
 */
export function selections(rules, related) {
  if (!Array.isArray(rules)) throw new PermanentError(`customize: relatedResources must be a list, got ${typeof rules}`);
  const declared = new Map(related.map((k) => [`${k.apiVersion} ${k.plural}`, k]));
  return rules.flatMap((rule, i) => {
    const where = `customize: relatedResources[${i}]`;
    if (rule === null || typeof rule !== 'object' || Array.isArray(rule)) throw new PermanentError(`${where}: expected an object`);
    const kind = declared.get(`${rule.apiVersion} ${rule.resource}`);
    if (kind === undefined) {
      const names = [...declared.keys()].join(', ') || 'none';
      throw new PermanentError(`${where}: ${rule.apiVersion} ${rule.resource} is not a declared related kind (declared: ${names})`);
    }
    const namespace = rule.namespace || undefined;
    const names = rule.names ?? [];
    if (!Array.isArray(names) || !names.every((n) => typeof n === 'string')) throw new PermanentError(`${where}: names must be a list of strings`);
    const chosen = names.length
      ? names.map((n) => Selection.byName(kind, n, { namespace }))
      : [Selection.byLabels(kind, rule.labelSelector ?? {}, { namespace })];
    // The namespaces' labels, to keep the rule's objects in matching namespaces only.
    if (rule.namespaceSelector !== undefined && rule.namespaceSelector !== null) {
      chosen.push(Selection.byLabels(namespaceKind(related, where), rule.namespaceSelector));
    }
    return chosen;
  });
}

/** @param {unknown} value @param {string} hook @returns {Record<string, any>} */
function response(value, hook) {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) throw new TypeError(`the ${hook} hook must return an object, not ${Array.isArray(value) ? 'an array' : typeof value}`);
  return /** @type {Record<string, any>} */ (value);
}

/** A response's `children` (none: an empty list), checked. @param {Record<string, any>} r @param {string} hook @returns {object[]} */
function desiredChildren(r, hook) {
  const desired = r.children ?? [];
  if (!Array.isArray(desired) || !desired.every((c) => c !== null && typeof c === 'object' && !Array.isArray(c))) {
    throw new TypeError(`the ${hook} hook's children must be a list of objects`);
  }
  return desired;
}

/** @param {Record<string, any>} r @param {string} hook */
function seconds(r, hook) {
  const s = r.resyncAfterSeconds ?? 0;
  if (typeof s !== 'number' || !Number.isFinite(s) || s < 0) throw new TypeError(`the ${hook} hook's resyncAfterSeconds must be a non-negative number, got ${JSON.stringify(s)}`);
  return s;
}

/**
 * A `Reconciler` subclass serving CompositeController hooks. `finalize`, if
 * given, is the finalize hook (it may be `sync` itself); the plugin then holds
 * the finalizer `finalizer` (default `metacontroller.weir.dev/<name>`).
 * @param {{name: string, parent: Kind, sync: Hook, children?: Kind[], related?: Kind[], customize?: Hook,
 *   finalize?: Hook, finalizer?: string, version?: string, crd?: string, hookVersion?: string}} declaration
 */
export function compositeController(declaration) {
  const { name, parent, sync, children = [], related = [], customize, finalize, version = '0.1.0', crd, hookVersion = 'v1' } = declaration;
  if (!HOOK_VERSIONS.includes(hookVersion)) throw new TypeError(`hookVersion must be one of ${HOOK_VERSIONS.join(', ')}, got ${JSON.stringify(hookVersion)}`);
  const hooks = ['sync', ...(customize ? ['customize'] : []), ...(finalize ? ['finalize'] : [])];
  const controller = controllerObject(name, parent, children, hooks, hookVersion);

  /**
   * The customize hook's `relatedResources` for `p` (a Promise of them if the hook is async).
   * @param {KubeObject} p @returns {any[] | Promise<any[]>}
   */
  const rules = (p) =>
    customize ? awaited(customize({ controller, parent: plain(p) }), (r) => response(r, 'customize').relatedResources ?? []) : [];

  const plurals = new Map(related.map((k) => [`${k.apiVersion} ${k.kind}`, k.plural]));

  /**
   * A rule with both `names` and `labelSelector` reads the named objects that also match; one
   * with a `namespaceSelector`, its objects in namespaces whose labels match.
   * @param {any[]} ruleList @param {Objects} objects
   */
  function filtered(ruleList, objects) {
    let keep = [...objects];
    const namespaces = keep.filter((o) => o.apiVersion === 'v1' && o.kind === 'Namespace');
    for (const rule of ruleList) {
      const ofRule = (/** @type {KubeObject} */ o) =>
        o.apiVersion === rule?.apiVersion && plurals.get(`${o.apiVersion} ${o.kind}`) === rule?.resource;
      if (rule?.names?.length && rule.labelSelector) {
        const selector = LabelSelector.parse(rule.labelSelector);
        keep = keep.filter((o) => !ofRule(o) || !rule.names.includes(o.name) || selector.matches(o.labels));
      }
      if (rule?.namespaceSelector !== undefined && rule?.namespaceSelector !== null) {
        const selector = LabelSelector.parse(rule.namespaceSelector);
        const allowed = new Set(namespaces.filter((n) => selector.matches(n.labels)).map((n) => n.name));
        keep = keep.filter((o) => !ofRule(o) || allowed.has(o.namespace));
      }
    }
    return new Objects(keep, objects.cluster);
  }

  /**
   * `hook`'s response to the request for `p`, once the customize hook's rules are known
   * (a Promise of it if either hook is async).
   * @param {Hook} hook @param {string} name @param {KubeObject} p @param {import('./objects.js').Children} observed @param {boolean} finalizing
   * @returns {Record<string, any> | Promise<Record<string, any>>}
   */
  const call = (hook, name, p, observed, finalizing) =>
    awaited(rules(p), (ruleList) =>
      awaited(
        hook({
          controller,
          parent: plain(p),
          children: objectMap(children, observed, p.namespace, hookVersion),
          related: objectMap(related, filtered(ruleList, observed.related), p.namespace, hookVersion),
          finalizing,
        }),
        (r) => response(r, name),
      ),
    );

  return class CompositeController extends Reconciler {
    name = name;
    version = version;
    parent = parent;
    children = children;
    related = related;
    finalizer = finalize ? (declaration.finalizer ?? `metacontroller.weir.dev/${name}`) : undefined;
    crd = crd;

    /** @param {KubeObject} p */
    select(p) {
      return awaited(rules(p), (ruleList) => selections(ruleList, related));
    }

    /** @param {KubeObject} p @param {import('./objects.js').Children} observed */
    reconcile(p, observed) {
      return awaited(call(sync, 'sync', p, observed, false), (r) => {
        const outcome = Outcome.apply(desiredChildren(r, 'sync'));
        if (r.status !== undefined && r.status !== null) outcome.status(r.status);
        const s = seconds(r, 'sync');
        return s > 0 ? outcome.requeueAfter(s * 1000) : outcome;
      });
    }

    /**
     * The finalize hook's `{children, status, finalized}`: children it returns are held (applied
     * and pruned) while the finalizer is; a response without `children` leaves them as they are.
     * @param {KubeObject} p @param {import('./objects.js').Children} observed
     */
    finalize(p, observed) {
      if (!finalize) return Cleanup.complete();
      return awaited(call(finalize, 'finalize', p, observed, true), (r) => {
        const acts = r.children !== undefined && r.children !== null;
        const cleanup = acts ? Cleanup.apply(desiredChildren(r, 'finalize')) : new Cleanup(false);
        if (r.status !== undefined && r.status !== null) cleanup.status(r.status);
        if (r.finalized === true) return cleanup.finalized();
        return cleanup.requeueAfter((seconds(r, 'finalize') || FINALIZE_RETRY_SECONDS) * 1000);
      });
    }
  };
}
