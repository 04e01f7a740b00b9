import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CONFIG_MAP, Cleanup, Kind, Outcome, PermanentError, Reconciler, configMap } from '../src/index.js';

class Echo extends Reconciler {
  name = 'echo';
  parent = new Kind('example.dev', 'v1', 'Echo', 'echoes');
  children = [CONFIG_MAP];

  /** @param {import('../src/index.js').Resource} parent @param {import('../src/index.js').Children} children */
  reconcile(parent, children) {
    if (!parent.spec?.text) throw new PermanentError('spec.text is required');
    return Outcome.apply([configMap(parent.name ?? '', { text: parent.spec.text })]).status({ seen: children.length });
  }
}

const echo = (/** @type {string} */ name, /** @type {string} */ text) =>
  JSON.stringify({ apiVersion: 'example.dev/v1', kind: 'Echo', metadata: { name }, spec: { text } });

test('handleReconcile decodes parent and children and runs reconcile', () => {
  const outcome = new Echo().handleReconcile(echo('e', 'new'), [JSON.stringify(configMap('e', { text: 'old' }))]);
  assert.deepEqual(outcome.children, [configMap('e', { text: 'new' })]);
  assert.deepEqual(outcome.desiredStatus, { seen: 1 });
});

test('an undecodable parent or child is a permanent error', () => {
  for (const [parent, children] of [['{not json', []], ['[1, 2]', []], ['"text"', []], [echo('e', 'x'), ['{}', 'nope']]]) {
    assert.throws(() => new Echo().handleReconcile(/** @type {string} */ (parent), /** @type {string[]} */ (children)), (e) => {
      assert.ok(e instanceof PermanentError);
      assert.match(e.message, /undecodable request/);
      return true;
    });
  }
});

test('a reconcile returning something else is a type error', () => {
  class Broken extends Echo {
    reconcile() {
      return /** @type {any} */ ({ children: [] });
    }
  }
  assert.throws(() => new Broken().handleReconcile(echo('e', 'x'), []), /must return an Outcome, not Object/);
});

test('finalize defaults to complete', () => {
  const cleanup = new Echo().handleFinalize(echo('e', 'x'), [], 'example.dev/cleanup');
  assert.ok(cleanup instanceof Cleanup);
  assert.ok(cleanup.isComplete);
});
