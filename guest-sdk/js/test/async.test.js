import { test } from 'node:test';
import assert from 'node:assert/strict';
import { exportReconciler } from '../src/guest.js';
import { CONFIG_MAP, Cleanup, Kind, Outcome, PermanentError, Reconciler, Selection, configMap } from '../src/index.js';
import { compositeController } from '../src/metacontroller.js';

const PARENT = new Kind('example.dev', 'v1', 'Thing', 'things');
const thing = (/** @type {Record<string, any>} */ spec = {}) => ({ apiVersion: 'example.dev/v1', kind: 'Thing', metadata: { name: 't', namespace: 'ns' }, spec });
const tick = () => new Promise((resolve) => setTimeout(resolve, 1));

/** Every hook async, each awaiting a timer first: the answer comes from a later turn of the event loop. */
class Later extends Reconciler {
  name = 'later';
  parent = PARENT;
  children = [CONFIG_MAP];
  related = [CONFIG_MAP];
  finalizer = 'example.dev/cleanup';

  /** @param {import('../src/index.js').Resource} parent */
  async select(parent) {
    await tick();
    return parent.spec.answer === 'wrong' ? [{ name: 'theme' }] : [Selection.byName(CONFIG_MAP, 'theme')];
  }

  /** @param {import('../src/index.js').Resource} parent */
  async reconcile(parent) {
    await tick();
    if (parent.spec.answer === 'wrong') return /** @type {any} */ ({ children: [] });
    if (parent.spec.answer === 'nothing') return /** @type {any} */ (undefined);
    if (parent.spec.answer === 'refuse') throw new PermanentError('spec.answer is not allowed');
    return Outcome.apply([configMap(parent.name ?? '', { text: 'later' })]).status({ ready: true });
  }

  /** @param {import('../src/index.js').Resource} parent */
  async finalize(parent) {
    await tick();
    return parent.spec.answer === 'wait' ? Cleanup.againAfter(3000) : Cleanup.complete();
  }
}

const request = (/** @type {Record<string, any>} */ spec) => ({ parent: JSON.stringify(thing(spec)), cluster: 'hub', children: [], related: [], finalizer: 'example.dev/cleanup' });

test('an async reconcile is awaited and its Outcome checked', async () => {
  const outcome = await new Later().handleReconcile(JSON.stringify(thing()), []);
  assert.deepEqual(outcome.children, [configMap('t', { text: 'later' })]);
  assert.deepEqual(outcome.desiredStatus, { ready: true });
});

test('an async reconcile resolving to something else is a type error naming its Promise', async () => {
  await assert.rejects(new Later().handleReconcile(JSON.stringify(thing({ answer: 'wrong' })), []), (e) => {
    assert.ok(e instanceof TypeError);
    assert.equal(e.message, "reconcile()'s Promise must resolve to an Outcome, not Object");
    return true;
  });
  await assert.rejects(new Later().handleReconcile(JSON.stringify(thing({ answer: 'nothing' })), []), /Promise must resolve to an Outcome, not undefined/);
});

test('an async select and finalize are awaited and checked', async () => {
  assert.deepEqual(await new Later().handleSelect(JSON.stringify(thing())), [Selection.byName(CONFIG_MAP, 'theme')]);
  await assert.rejects(new Later().handleSelect(JSON.stringify(thing({ answer: 'wrong' }))), /select\(\)'s Promise must resolve to Selections, not Object/);
  assert.equal((await new Later().handleFinalize(JSON.stringify(thing({ answer: 'wait' })), [], 'f')).againAfterMs, 3000);
  assert.ok((await new Later().handleFinalize(JSON.stringify(thing()), [], 'f')).isComplete);
});

test('a synchronous hook still answers synchronously', () => {
  class Now extends Reconciler {
    reconcile() {
      return Outcome.apply([]);
    }
  }
  assert.ok(new Now().handleReconcile(JSON.stringify(thing()), []) instanceof Outcome);
});

test('the component glue answers an async hook with the children it resolved to', async () => {
  const glue = exportReconciler(new Later(), () => {});
  const answer = await glue.reconcile(request({}));
  assert.equal(answer.tag, 'ok');
  assert.deepEqual(answer.val.children.map((c) => JSON.parse(c.object)), [configMap('t', { text: 'later' })]);
  assert.equal(answer.val.status, '{"ready":true}');
  assert.deepEqual(await glue.selectRelated(request({}).parent), { tag: 'ok', val: [{ apiVersion: 'v1', kind: 'ConfigMap', namespace: undefined, cluster: undefined, selector: { tag: 'name', val: 'theme' } }] });
  assert.deepEqual(await glue.finalize(request({ answer: 'wait' })), { tag: 'ok', val: { children: undefined, status: undefined, finalized: false, requeue: { tag: 'after', val: 3000n } } });
});

test('the component glue reports what an async hook got wrong, never an empty answer', async () => {
  /** @type {[string, string][]} */
  const logged = [];
  const glue = exportReconciler(new Later(), (level, message) => logged.push([level, message]));
  const wrong = await glue.reconcile(request({ answer: 'wrong' }));
  assert.deepEqual(wrong, { tag: 'err', val: { kind: 'transient', message: "TypeError: reconcile()'s Promise must resolve to an Outcome, not Object" } });
  assert.equal(logged[0][0], 'error');
  assert.deepEqual(await glue.reconcile(request({ answer: 'refuse' })), { tag: 'err', val: { kind: 'permanent', message: 'spec.answer is not allowed' } });
  assert.equal((await glue.selectRelated(request({ answer: 'wrong' }).parent)).tag, 'err');
});

/** Metacontroller-style webhook functions, all `async` as Node.js hooks usually are. */
const asyncHooks = {
  /** @param {any} request */
  async customize(request) {
    await tick();
    return { relatedResources: [{ apiVersion: 'v1', resource: 'configmaps', names: [request.parent.spec.theme ?? 'theme'] }] };
  },
  /** @param {any} request */
  async sync(request) {
    await tick();
    if (request.parent.spec.answer === 'list') return [];
    const theme = request.related['ConfigMap.v1'][request.parent.spec.theme ?? 'theme'];
    return { children: [configMap(`${request.parent.metadata.name}-page`, { css: theme?.data?.css ?? 'none' })], status: { pages: 1 } };
  },
  /** @param {any} request */
  async finalize(request) {
    await tick();
    const left = Object.keys(request.children['ConfigMap.v1']).length;
    return left ? { finalized: false, resyncAfterSeconds: 1 } : { finalized: true };
  },
};

const metacontroller = () =>
  new (compositeController({ name: 'async-things', parent: PARENT, children: [CONFIG_MAP], related: [CONFIG_MAP], ...asyncHooks }))();

test('async Metacontroller hooks: customize, sync and finalize are awaited', async () => {
  const plugin = metacontroller();
  assert.deepEqual(await plugin.handleSelect(JSON.stringify(thing({ theme: 'dark' }))), [Selection.byName(CONFIG_MAP, 'dark')]);
  const theme = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'dark', namespace: 'ns' }, data: { css: 'body{}' } };
  const outcome = await plugin.handleReconcile(JSON.stringify(thing({ theme: 'dark' })), [], [JSON.stringify(theme)]);
  assert.deepEqual(outcome.children, [configMap('t-page', { css: 'body{}' })]);
  assert.deepEqual(outcome.desiredStatus, { pages: 1 });
  const page = { ...configMap('t-page', { css: 'x' }), metadata: { name: 't-page', namespace: 'ns' } };
  assert.equal((await plugin.handleFinalize(JSON.stringify(thing()), [JSON.stringify(page)], 'f')).againAfterMs, 1000);
  assert.ok((await plugin.handleFinalize(JSON.stringify(thing()), [], 'f')).isComplete);
});

test('an async sync hook resolving to something other than a response is a type error', async () => {
  await assert.rejects(metacontroller().handleReconcile(JSON.stringify(thing({ answer: 'list' })), []), (e) => {
    assert.ok(e instanceof TypeError);
    assert.match(e.message, /the sync hook must return an object, not an array/);
    return true;
  });
  const answer = await exportReconciler(metacontroller(), () => {}).reconcile(request({ answer: 'list' }));
  assert.equal(answer.tag, 'err', 'not an empty list of children');
});
