// The `Reconciler` base class: a plugin's identity and its pure reconcile function.
//
// Everything here is plain JavaScript, so a plugin's logic is tested in Node
// with `node --test` by calling `reconcile` or `handleReconcile`.

import { Children, Kind, KubeObject } from './objects.js';
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
   * @returns {Selection[]}
   */
  select(parent) {
    return [];
  }

  /**
   * The desired children and status of `parent`, given the children it owns now.
   * @param {Resource} parent
   * @param {Children} children
   * @returns {Outcome}
   */
  reconcile(parent, children) {
    throw new Error(`${this.constructor.name} must implement reconcile()`);
  }

  /**
   * One cleanup step while `parent` is being deleted; by default nothing to clean.
   * @param {Resource} parent
   * @param {Children} children
   * @param {string} finalizer
   * @returns {Cleanup}
   */
  finalize(parent, children, finalizer) {
    return Cleanup.complete();
  }

  /**
   * Decode the parent as the host sends it, run `select`, check its result.
   * @param {string} parentJson
   * @returns {Selection[]}
   */
  handleSelect(parentJson) {
    const { parent } = decode(parentJson, [], []);
    const selections = [...this.select(parent)];
    for (const s of selections) {
      if (!(s instanceof Selection)) throw new TypeError(`select() must return Selections, not ${describeValue(s)}`);
    }
    return selections;
  }

  /**
   * Decode the request as the host sends it, run `reconcile`, check its result.
   * @param {string} parentJson
   * @param {string[]} childrenJson
   * @param {string[]} [relatedJson] the selected related objects
   */
  handleReconcile(parentJson, childrenJson, relatedJson = []) {
    const { parent, children } = decode(parentJson, childrenJson, relatedJson);
    const outcome = this.reconcile(parent, children);
    if (!(outcome instanceof Outcome)) throw new TypeError(`reconcile() must return an Outcome, not ${describeValue(outcome)}`);
    return outcome;
  }

  /**
   * Decode the request as the host sends it, run `finalize`, check its result.
   * @param {string} parentJson
   * @param {string[]} childrenJson
   * @param {string} finalizer
   * @param {string[]} [relatedJson] the selected related objects
   */
  handleFinalize(parentJson, childrenJson, finalizer, relatedJson = []) {
    const { parent, children } = decode(parentJson, childrenJson, relatedJson);
    const cleanup = this.finalize(parent, children, finalizer);
    if (!(cleanup instanceof Cleanup)) throw new TypeError(`finalize() must return a Cleanup, not ${describeValue(cleanup)}`);
    return cleanup;
  }
}

/** @param {unknown} value */
function describeValue(value) {
  return value === null || typeof value !== 'object' ? String(value) : value.constructor?.name ?? 'object';
}

/**
 * Parse the request; undecodable input cannot get better by retrying, so it is permanent.
 * @param {string} parentJson
 * @param {string[]} childrenJson
 * @param {string[]} relatedJson
 */
function decode(parentJson, childrenJson, relatedJson) {
  try {
    const parent = new KubeObject(object(JSON.parse(parentJson), 'parent'));
    const children = new Children(
      childrenJson.map((c, i) => object(JSON.parse(c), `child ${i}`)),
      relatedJson.map((r, i) => object(JSON.parse(r), `related object ${i}`)),
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
