// The shared Blog fixtures (plugins/blog/fixtures), run natively against the JavaScript Blog.
//
// `weir test` is the judge (it runs the built component in the sandbox); this
// runs the same files in milliseconds while editing, with the same rules:
// children matched by (apiVersion, kind, name), null fields dropped, the
// `related:` objects resolved against the Blog's `select` as the host resolves
// them (by name, or by label selector sorted by name, in the parent's namespace
// only), and a convergence check on every successful reconcile.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { ReconcileError } from '@weir/guest-sdk';
import Blog from '../src/blog.js';

const fixtures = fileURLToPath(new URL('../../blog/fixtures/', import.meta.url));

/** @param {any} value @returns {any} */
function dropNulls(value) {
  if (Array.isArray(value)) return value.map(dropNulls);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== null && v !== undefined).map(([k, v]) => [k, dropNulls(v)]));
  }
  return value;
}

/** @param {any} o */
const key = (o) => JSON.stringify([o.apiVersion, o.kind, o.metadata?.name]);

/** @param {any[]} objects */
const byKey = (objects) => Object.fromEntries(objects.map((o) => [key(o), dropNulls(JSON.parse(JSON.stringify(o)))]));

/**
 * A selection in the fixtures' `expect.selections` shape.
 * @param {import('@weir/guest-sdk').Selection} s
 */
function selectionAsFixture(s) {
  const selector =
    s.name !== undefined
      ? { name: s.name }
      : {
          labels: {
            matchLabels: Object.fromEntries(s.labels?.matchLabels ?? []),
            matchExpressions: (s.labels?.matchExpressions ?? []).map((r) => ({ key: r.key, operator: r.operator, values: [...r.values] })),
          },
        };
  return { apiVersion: s.apiVersion, kind: s.kind, selector, ...(s.namespace !== undefined && { namespace: s.namespace }) };
}

/**
 * The selected objects that exist, as the host passes them (each once, sorted by name).
 * @param {import('@weir/guest-sdk').Selection[]} selections
 * @param {any} parent
 * @param {any[]} cluster
 */
function resolve(selections, parent, cluster) {
  const namespace = parent.metadata?.namespace;
  /** @type {Map<string, any>} */
  const chosen = new Map();
  for (const s of selections) {
    assert.ok(s.namespace === undefined || s.namespace === namespace, `selection in another namespace ${s.namespace} would be refused`);
    for (const o of cluster) {
      const meta = o.metadata ?? {};
      if (o.apiVersion !== s.apiVersion || o.kind !== s.kind || meta.namespace !== namespace) continue;
      if (s.name === meta.name || (s.labels !== undefined && s.labels.matches(meta.labels ?? {}))) chosen.set(meta.name, o);
    }
  }
  return [...chosen.keys()].sort().map((n) => chosen.get(n));
}

/** @param {import('@weir/guest-sdk').Outcome} outcome */
const requeueOf = (outcome) => (typeof outcome.requeue === 'string' ? outcome.requeue : { after: outcome.requeue });

/** The desired children as the host would store them (FIXTURES.md, convergence). */
function asStored(/** @type {any[]} */ desired, /** @type {any} */ parent, /** @type {any[]} */ observed) {
  const previous = new Map(observed.map((o) => [key(o), o]));
  return desired.map((c) => {
    const child = structuredClone(JSON.parse(JSON.stringify(c)));
    child.metadata = { ...child.metadata, namespace: parent.metadata?.namespace };
    child.metadata.ownerReferences = [
      { apiVersion: parent.apiVersion, kind: parent.kind, name: parent.metadata?.name, uid: parent.metadata?.uid, controller: true, blockOwnerDeletion: true },
    ];
    const before = previous.get(key(child));
    if (before && 'status' in before) child.status = before.status;
    return child;
  });
}

const files = readdirSync(fixtures).filter((f) => f.endsWith('.yaml')).sort();

test('the fixtures exist', () => assert.ok(files.length > 0, `no fixtures in ${fixtures}`));

for (const file of files) {
  const fixture = parse(readFileSync(fixtures + file, 'utf8'));
  test(`${file}: ${fixture.description}`, () => {
    const { parent, expect } = fixture;
    const observed = fixture.observed ?? [];
    const blog = new Blog();
    const encoded = observed.map((/** @type {any} */ o) => JSON.stringify(o));
    let result;
    /** @type {string[]} */
    let related = [];
    try {
      const selections = blog.handleSelect(JSON.stringify(parent));
      if ('selections' in expect) assert.deepEqual(selections.map(selectionAsFixture), expect.selections);
      related = resolve(selections, parent, fixture.related ?? []).map((o) => JSON.stringify(o));
      result =
        fixture.call === 'finalize'
          ? blog.handleFinalize(JSON.stringify(parent), encoded, fixture.finalizer ?? blog.finalizer, related)
          : blog.handleReconcile(JSON.stringify(parent), encoded, related);
    } catch (e) {
      if (!(e instanceof ReconcileError)) throw e;
      assert.ok(expect.error, `unexpected error ${e.kind}: ${e.message}`);
      assert.equal(e.kind, expect.error.kind);
      assert.ok(e.message.includes(expect.error.message_contains ?? ''), `"${e.message}" lacks "${expect.error.message_contains}"`);
      return;
    }
    assert.ok(!expect.error, 'expected an error');
    if (fixture.call === 'finalize') {
      const cleanup = /** @type {import('@weir/guest-sdk').Cleanup} */ (result);
      assert.deepEqual(cleanup.isComplete ? 'complete' : { againAfter: cleanup.againAfterMs }, expect.finalize);
      return;
    }
    const outcome = /** @type {import('@weir/guest-sdk').Outcome} */ (result);
    if ('children' in expect) assert.deepEqual(byKey(outcome.children), byKey(expect.children));
    if ('status' in expect) {
      const got = outcome.desiredStatus === undefined ? null : dropNulls(JSON.parse(JSON.stringify(outcome.desiredStatus)));
      assert.deepEqual(got, expect.status === null ? null : dropNulls(expect.status));
    }
    if ('requeue' in expect) assert.deepEqual(requeueOf(outcome), expect.requeue);
    const again = blog.handleReconcile(JSON.stringify(parent), asStored(outcome.children, parent, observed).map((c) => JSON.stringify(c)),
      related,
    );
    assert.deepEqual(
      [byKey(again.children), dropNulls(again.desiredStatus ?? null), again.requeue],
      [byKey(outcome.children), dropNulls(outcome.desiredStatus ?? null), outcome.requeue],
      'NOT CONVERGENT',
    );
  });
}
