// What a plugin reads beyond its children: selections of related objects, by name or by labels.
//
// A plugin lists the kinds it may read in `related` and, for each parent,
// returns `Selection`s from `select`. The host resolves them from its caches
// and hands the objects that exist to `reconcile` and `finalize` in
// `children.related`. Label selectors are Kubernetes' `LabelSelector` in its
// JSON shape (`matchLabels`, `matchExpressions`), so a selector the user wrote
// in a spec passes through unchanged.
import { PermanentError } from './outcome.js';

/** The operators of a `matchExpressions` entry, as Kubernetes spells them. */
export const OPERATORS = /** @type {const} */ (['In', 'NotIn', 'Exists', 'DoesNotExist']);

/** @typedef {{key: string, operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist', values: string[]}} Requirement */

/** A checked label selector: every `matchLabels` pair and every requirement must hold. */
export class LabelSelector {
  /**
   * @param {[string, string][]} [matchLabels] sorted by key
   * @param {Requirement[]} [matchExpressions]
   */
  constructor(matchLabels = [], matchExpressions = []) {
    this.matchLabels = matchLabels;
    this.matchExpressions = matchExpressions;
    Object.freeze(this);
  }

  /**
   * From Kubernetes' JSON shape; a malformed selector is a `PermanentError` naming the field.
   * Only the shape is checked here (types, a known operator). What Kubernetes would also
   * refuse (`In` without values, `Exists` with values, an empty key) passes, and the host
   * refuses it on the parent (`InvalidSelection`), as for a plugin in any language.
   * @param {unknown} value
   */
  static parse(value) {
    if (value === undefined || value === null) return new LabelSelector();
    if (typeof value !== 'object' || Array.isArray(value)) throw new PermanentError(`label selector: expected an object, got ${typeof value === 'object' ? 'array' : typeof value}`);
    const v = /** @type {Record<string, any>} */ (value);
    const labels = v.matchLabels ?? {};
    if (typeof labels !== 'object' || Array.isArray(labels) || !Object.values(labels).every((x) => typeof x === 'string')) {
      throw new PermanentError('label selector: matchLabels must map strings to strings');
    }
    const expressions = v.matchExpressions ?? [];
    if (!Array.isArray(expressions)) throw new PermanentError('label selector: matchExpressions must be a list');
    const requirements = expressions.map((e, i) => {
      const where = `label selector: matchExpressions[${i}]`;
      if (e === null || typeof e !== 'object' || typeof e.key !== 'string') throw new PermanentError(`${where}: expected an object with a string key`);
      const { operator } = e;
      const values = e.values ?? [];
      if (!OPERATORS.includes(operator)) throw new PermanentError(`${where}: operator ${JSON.stringify(operator)} is not In, NotIn, Exists or DoesNotExist`);
      if (!Array.isArray(values) || !values.every((x) => typeof x === 'string')) throw new PermanentError(`${where}: values must be a list of strings`);
      return /** @type {Requirement} */ ({ key: e.key, operator, values: [...values] });
    });
    const pairs = /** @type {[string, string][]} */ (Object.entries(labels)).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return new LabelSelector(pairs, requirements);
  }

  /**
   * Whether an object carrying `labels` is selected (what the host computes).
   * @param {Record<string, string>} labels
   */
  matches(labels) {
    if (this.matchLabels.some(([k, v]) => labels[k] !== v)) return false;
    return this.matchExpressions.every(({ key, operator, values }) => {
      const present = Object.hasOwn(labels, key);
      switch (operator) {
        case 'In':
          return present && values.includes(labels[key]);
        case 'NotIn':
          return !present || !values.includes(labels[key]);
        case 'Exists':
          return present;
        default:
          return !present;
      }
    });
  }
}

/**
 * Objects of one related kind to read for a parent: one by `name`, or a set by
 * `labels`. Build it with `Selection.byName`, `Selection.byLabels` or
 * `Selection.matching`. `namespace` `undefined` means the parent's (a
 * namespaced kind is read there only; a cluster-scoped kind cluster-wide).
 * `cluster` `undefined` means the parent's cluster (contract 0.4.0; `inCluster` names another).
 */
export class Selection {
  /**
   * @param {string} apiVersion
   * @param {string} kind
   * @param {{name?: string, labels?: LabelSelector, namespace?: string, cluster?: string}} which
   */
  constructor(apiVersion, kind, { name, labels, namespace, cluster } = {}) {
    if ((name === undefined) === (labels === undefined)) throw new TypeError('a Selection reads either one object by name or a set by labels');
    this.apiVersion = apiVersion;
    this.kind = kind;
    this.name = name;
    this.labels = labels;
    this.namespace = namespace;
    this.cluster = cluster;
    Object.freeze(this);
  }

  /**
   * The same selection, read in `cluster`: what it finds is in `children.related.inCluster(cluster)`.
   * @param {string} cluster
   */
  inCluster(cluster) {
    const { name, labels, namespace } = this;
    return new Selection(this.apiVersion, this.kind, { name, labels, namespace, cluster });
  }

  /**
   * The object of `kind` called `name`, whether or not it exists yet (its creation wakes the parent).
   * @param {import('./objects.js').Kind} kind
   * @param {string} name
   * @param {{namespace?: string}} [opts]
   */
  static byName(kind, name, { namespace } = {}) {
    return new Selection(kind.apiVersion, kind.kind, { name, namespace });
  }

  /**
   * Every object of `kind` whose labels match `selector` (a `LabelSelector`, or its JSON shape).
   * @param {import('./objects.js').Kind} kind
   * @param {unknown} selector
   * @param {{namespace?: string}} [opts]
   */
  static byLabels(kind, selector, { namespace } = {}) {
    const labels = selector instanceof LabelSelector ? selector : LabelSelector.parse(selector);
    return new Selection(kind.apiVersion, kind.kind, { labels, namespace });
  }

  /**
   * Every object of `kind` carrying all of `labels`.
   * @param {import('./objects.js').Kind} kind
   * @param {Record<string, string>} labels
   * @param {{namespace?: string}} [opts]
   */
  static matching(kind, labels, opts = {}) {
    return Selection.byLabels(kind, { matchLabels: labels }, opts);
  }
}
