import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CONFIG_MAP, Kind, LabelSelector, NAMESPACE, Outcome, PermanentError, Reconciler, Selection } from '../src/index.js';

test('match labels and every operator hold together', () => {
  const selector = LabelSelector.parse({
    matchLabels: { app: 'blog' },
    matchExpressions: [
      { key: 'tier', operator: 'In', values: ['web', 'api'] },
      { key: 'env', operator: 'NotIn', values: ['dev'] },
      { key: 'owner', operator: 'Exists' },
      { key: 'legacy', operator: 'DoesNotExist' },
    ],
  });
  const base = { app: 'blog', tier: 'web', owner: 'me' };
  assert.ok(selector.matches(base));
  assert.ok(selector.matches({ ...base, env: 'prod' }));
  assert.ok(!selector.matches({ ...base, env: 'dev' }));
  assert.ok(!selector.matches({ ...base, app: 'shop' }));
  assert.ok(!selector.matches({ ...base, tier: 'db' }));
  assert.ok(!selector.matches({ app: 'blog', tier: 'web' }));
  assert.ok(!selector.matches({ ...base, legacy: 'yes' }));
});

test('an empty selector selects everything', () => {
  assert.ok(LabelSelector.parse({}).matches({}));
  assert.ok(LabelSelector.parse(undefined).matches({ a: 'b' }));
});

test('a malformed selector is a permanent error naming the field', () => {
  for (const [bad, text] of [
    [{ matchLabels: { a: 1 } }, 'matchLabels'],
    [{ matchExpressions: [{ key: 'a', operator: 'Near', values: ['x'] }] }, 'matchExpressions[0]: operator "Near"'],
    [{ matchExpressions: [{ key: 'a', operator: 'In', values: 'x' }] }, 'values must be a list of strings'],
    [{ matchExpressions: [{ operator: 'Exists' }] }, 'a string key'],
    ['app=blog', 'expected an object'],
  ]) {
    assert.throws(() => LabelSelector.parse(bad), (e) => e instanceof PermanentError && e.message.includes(/** @type {string} */ (text)));
  }
});

test('what only Kubernetes refuses is left to the host', () => {
  const selector = LabelSelector.parse({ matchExpressions: [{ key: 'a', operator: 'In' }, { key: 'b', operator: 'Exists', values: ['x'] }] });
  assert.deepEqual(selector.matchExpressions.map((r) => r.values), [[], ['x']]);
});

test('builders name the kind by apiVersion and kind', () => {
  assert.deepEqual(Selection.byName(CONFIG_MAP, 'theme'), new Selection('v1', 'ConfigMap', { name: 'theme' }));
  assert.equal(Selection.byName(NAMESPACE, 'default').kind, 'Namespace');
  const matching = Selection.matching(new Kind('apps', 'v1', 'Deployment', 'deployments'), { b: '2', a: '1' }, { namespace: 'ns' });
  assert.equal(matching.apiVersion, 'apps/v1');
  assert.equal(matching.namespace, 'ns');
  assert.deepEqual(matching.labels?.matchLabels, [['a', '1'], ['b', '2']]);
});

test('a selection is by name or by labels, never both', () => {
  assert.throws(() => new Selection('v1', 'ConfigMap'), TypeError);
  assert.throws(() => new Selection('v1', 'ConfigMap', { name: 'a', labels: new LabelSelector() }), TypeError);
});

class Themed extends Reconciler {
  name = 'themed';
  parent = new Kind('example.dev', 'v1', 'Thing', 'things');
  related = [CONFIG_MAP];

  /** @param {import('../src/index.js').Resource} parent */
  select(parent) {
    return parent.spec?.theme ? [Selection.byName(CONFIG_MAP, parent.spec.theme)] : [];
  }

  /** @param {import('../src/index.js').Resource} parent @param {import('../src/index.js').Children} children */
  reconcile(parent, children) {
    const theme = children.related.get(CONFIG_MAP, parent.spec?.theme ?? '');
    return Outcome.apply([]).status({ theme: theme?.data ?? null });
  }
}

const parent = JSON.stringify({ metadata: { name: 't' }, spec: { theme: 'dark' } });

test('handleSelect decodes the parent and returns its selections', () => {
  assert.deepEqual(new Themed().handleSelect(parent), [Selection.byName(CONFIG_MAP, 'dark')]);
  assert.deepEqual(new Themed().handleSelect(JSON.stringify({ metadata: { name: 't' } })), []);
});

test('handleSelect refuses what is not a Selection', () => {
  class Wrong extends Themed {
    select() {
      return /** @type {any} */ ([['v1', 'ConfigMap', 'dark']]);
    }
  }
  assert.throws(() => new Wrong().handleSelect(parent), /must return Selections, not Array/);
});

test('related objects arrive beside the children and apart from them', () => {
  const dark = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'dark' }, data: { 'style.css': 'body{}' } };
  assert.deepEqual(new Themed().handleReconcile(parent, [], [JSON.stringify(dark)]).desiredStatus, { theme: { 'style.css': 'body{}' } });
  assert.deepEqual(new Themed().handleReconcile(parent, [JSON.stringify(dark)]).desiredStatus, { theme: null }, 'a child is not a related object');
});

test('an undecodable related object is a permanent error', () => {
  assert.throws(() => new Themed().handleReconcile(parent, [], ['[1]']), (e) => e instanceof PermanentError && /related object 0/.test(e.message));
});

test('a plugin that declares nothing related selects nothing', () => {
  class Plain extends Reconciler {
    name = 'plain';
    parent = new Kind('example.dev', 'v1', 'Thing', 'things');
  }
  assert.deepEqual(new Plain().handleSelect(parent), []);
  assert.deepEqual(new Plain().related, []);
});
