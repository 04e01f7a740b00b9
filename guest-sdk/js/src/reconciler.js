// The `Reconciler` base class: a plugin's identity and its pure reconcile function.
//
// Everything here is plain JavaScript, so a plugin's logic is tested in Node
// with `node --test` by calling `reconcile` or `handleReconcile`. Any of the
// hooks may be `async`: its Promise is awaited, and what it resolves to is
// checked as a plain answer would be.

import { awaited, isThenable } from './awaited.js';
import { Children, Kind, KubeObject, inCluster } from './objects.js';
import { Cleanup, Outcome, PermanentError } from './outcome.js';
import { Selection } from './selection.js';

/** @typedef {import('./objects.js').Resource} Resource */

/**
 * Base class of a JavaScript reconciler plugin. A subclass sets the fields
 * `describe` reports (`name`, `version`, `parent`, `children`, optionally
 * `related`, `finalizer` and `crd`) and implements `reconcile` (and
 * `finalize` if it declares a finalizer, `select` if it declares related kinds).
 */
export class Reconciler {
  /** @type {string} Plugin name; the field manager is `weir/<name>`. */
  name = '';
  /** @type {string} Plugin version (semver). */
  version = '0.1.0';
  /** @type {Kind | undefined} The kind this plugin reconciles. */
  parent = undefined;
  /** @type {Kind[]} The kinds this plugin may create. */
  children = [];
  /** @type {Kind[]} The kinds this plugin may read beyond its children (related objects). */
  related = [];

  /** @type {string | undefined} Finalizer the host holds on each parent, if any. */
  finalizer = undefined;
  /** @type {string | undefined} The parent's CRD (YAML or JSON). */
  crd = undefined;

  /**
   * The related objects to read for `parent`, of `related` kinds only; by
   * default none. Called before every `reconcile` and `finalize`, which find
   * the selected objects that exist in `children.related`. Must depend on the
   * parent alone. A change to a selected object (or its creation) reconciles
   * the parent again.
   * @param {Resource} parent
   * @returns {Iterable<Selection> | Promise<Iterable<Selection>>}
   */
  select(parent) {
    return [];
  }

  /**
   * The desired children and status of `parent`, given the children it owns now.
   * @param {Resource} parent
   * @param {Children} children
   * @returns {Outcome | Promise<Outcome>}
   */
  reconcile(parent, children) {
    throw new Error(`${this.constructor.name} must implement reconcile()`);
  }

  /**
   * One cleanup step while `parent` is being deleted; by default nothing to clean.
   * @param {Resource} parent
   * @param {Children} children
   * @param {string} finalizer
   * @returns {Cleanup | Promise<Cleanup>}
   */
  finalize(parent, children, finalizer) {
    return Cleanup.complete();
  }

  /**
   * Decode the parent as the host sends it, run `select`, check its result
   * (a Promise of them when `select` is async).
   * @param {string} parentJson
   * @returns {Selection[] | Promise<Selection[]>}
   */
  handleSelect(parentJson) {
    const { parent } = decode(parentJson, [], []);
    const answer = this.select(parent);
    return awaited(answer, (found) => {
      const selections = found !== null && typeof found === 'object' && Symbol.iterator in found ? [...found] : undefined;
      if (selections === undefined) throw wrong('select', 'Selections', answer, found);
      for (const s of selections) {
        if (!(s instanceof Selection)) throw wrong('select', 'Selections', answer, s);
      }
      return selections;
    });
  }

  /**
   * Decode the request as the host sends it, run `reconcile`, check its result
   * (a Promise of it when `reconcile` is async).
   * @param {string} parentJson
   * @param {Placed[]} childrenJson
   * @param {Placed[]} [relatedJson] the selected related objects
   * @param {string} [cluster] the name of the parent's cluster (contract 0.4.0)
   * @returns {Outcome | Promise<Outcome>}
   */
  handleReconcile(parentJson, childrenJson, relatedJson = [], cluster = undefined) {
    const { parent, children } = decode(parentJson, childrenJson, relatedJson, cluster);
    const answer = this.reconcile(parent, children);
    return awaited(answer, (outcome) => {
      if (!(outcome instanceof Outcome)) throw wrong('reconcile', 'an Outcome', answer, outcome);
      return outcome;
    });
  }

  /**
   * Decode the request as the host sends it, run `finalize`, check its result
   * (a Promise of it when `finalize` is async).
   * @param {string} parentJson
   * @param {Placed[]} childrenJson
   * @param {string} finalizer
   * @param {Placed[]} [relatedJson] the selected related objects
   * @param {string} [cluster] the name of the parent's cluster (contract 0.4.0)
   * @returns {Cleanup | Promise<Cleanup>}
   */
  handleFinalize(parentJson, childrenJson, finalizer, relatedJson = [], cluster = undefined) {
    const { parent, children } = decode(parentJson, childrenJson, relatedJson, cluster);
    const answer = this.finalize(parent, children, finalizer);
    return awaited(answer, (cleanup) => {
      if (!(cleanup instanceof Cleanup)) throw wrong('finalize', 'a Cleanup', answer, cleanup);
      return cleanup;
    });
  }
}

/**
 * The error for a hook's answer that is not one: `value` is what `hook` returned, or what its
 * Promise (`answer`) resolved to.
 * @param {string} hook @param {string} expected @param {unknown} answer @param {unknown} value
 */
function wrong(hook, expected, answer, value) {
  const must = isThenable(answer) ? `${hook}()'s Promise must resolve to` : `${hook}() must return`;
  return new TypeError(`${must} ${expected}, not ${describeValue(value)}`);
}

/** @param {unknown} value */
function describeValue(value) {
  return value === null || typeof value !== 'object' ? String(value) : value.constructor?.name ?? 'object';
}

/**
 * An observed object as a request carries it: its JSON text, or (contract 0.4.0) the text and
 * the cluster it lives in.
 * @typedef {string | {cluster: string, object: string}} Placed
 */

/**
 * Parse the request; undecodable input cannot get better by retrying, so it is permanent.
 * @param {string} parentJson
 * @param {Placed[]} childrenJson
 * @param {Placed[]} relatedJson
 * @param {string | undefined} cluster
 */
function decode(parentJson, childrenJson, relatedJson, cluster) {
  /** @param {Placed} p @param {string} what */
  const placed = (p, what) =>
    typeof p === 'string' ? object(JSON.parse(p), what) : inCluster(p.cluster, object(JSON.parse(p.object), what));
  try {
    const parent = new KubeObject(object(JSON.parse(parentJson), 'parent'));
    const children = new Children(
      childrenJson.map((c, i) => placed(c, `child ${i}`)),
      relatedJson.map((r, i) => placed(r, `related object ${i}`)),
      cluster,
    );
    return { parent, children };
  } catch (e) {
    throw new PermanentError(`undecodable request: ${e instanceof Error ? e.message : e}`);
  }
}

/** @param {unknown} value @param {string} what @returns {Record<string, any>} */
function object(value, what) {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new TypeError(`${what} is not a JSON object`);
  return /** @type {Record<string, any>} */ (value);
}
