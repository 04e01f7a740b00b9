import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CONFIG_MAP, DEPLOYMENT, Kind, NAMESPACE, PermanentError, Selection } from '../src/index.js';
import { FINALIZE_RETRY_SECONDS, compositeController } from '../src/metacontroller.js';

const PARENT = new Kind('example.dev', 'v1', 'Thing', 'things');
const thing = (spec = {}) => ({ apiVersion: 'example.dev/v1', kind: 'Thing', metadata: { name: 't', namespace: 'ns' }, spec });
/** @param {string} name @param {Record<string, string>} [labels] @param {Record<string, string>} [data] */
const cm = (name, labels = {}, data = {}) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'ns', labels }, data });

/** Webhook functions as Metacontroller calls them, recording each request. */
function recorder({ syncResponse = /** @type {any} */ ({ children: [] }), finalizeResponse = /** @type {any} */ (undefined), relatedResources = /** @type {any[]} */ ([]) } = {}) {
  /** @type {[string, any][]} */
  const requests = [];
  const hooks = {
    requests,
    syncResponse,
    finalizeResponse,
    relatedResources,
    sync: (/** @type {any} */ r) => (requests.push(['sync', structuredClone(r)]), hooks.syncResponse),
    customize: (/** @type {any} */ r) => (requests.push(['customize', structuredClone(r)]), { relatedResources: hooks.relatedResources }),
    finalize: (/** @type {any} */ r) => (requests.push(['finalize', structuredClone(r)]), hooks.finalizeResponse),
  };
  return hooks;
}

/** @param {ReturnType<typeof recorder>} hooks @param {object} [extra] */
const plugin = (hooks, extra = {}) => {
  const Plugin = compositeController({
    name: 'thing-controller',
    parent: PARENT,
    children: [CONFIG_MAP, DEPLOYMENT],
    related: [CONFIG_MAP, NAMESPACE],
    sync: hooks.sync,
    customize: hooks.customize,
    ...extra,
  });
  return new Plugin();
};

const syncRequest = (/** @type {ReturnType<typeof recorder>} */ hooks) => hooks.requests.find(([h]) => h === 'sync')?.[1];

test("the sync request has Metacontroller's shape with every declared kind", () => {
  const hooks = recorder();
  const observed = cm('t-page', {}, { text: 'x' });
  plugin(hooks).handleReconcile(JSON.stringify(thing({ a: 1 })), [JSON.stringify(observed)], [JSON.stringify(cm('theme', {}, { css: 'y' }))]);
  const request = syncRequest(hooks);
  assert.deepEqual(request.parent, thing({ a: 1 }));
  assert.deepEqual(request.children, { 'ConfigMap.v1': { 't-page': observed }, 'Deployment.apps/v1': {} });
  assert.deepEqual(request.related, { 'ConfigMap.v1': { theme: cm('theme', {}, { css: 'y' }) }, 'Namespace.v1': {} });
  assert.equal(request.finalizing, false);
  assert.equal(request.controller.kind, 'CompositeController');
  assert.equal(request.controller.metadata.name, 'thing-controller');
  assert.deepEqual(request.controller.spec.parentResource, { apiVersion: 'example.dev/v1', resource: 'things' });
  assert.deepEqual(request.controller.spec.childResources, [
    { apiVersion: 'v1', resource: 'configmaps' },
    { apiVersion: 'apps/v1', resource: 'deployments' },
  ]);
});

test('the response becomes children, status and requeue', () => {
  const hooks = recorder({ syncResponse: { children: [cm('t-page')], status: { pages: 1 }, resyncAfterSeconds: 1.5 } });
  const outcome = plugin(hooks).handleReconcile(JSON.stringify(thing()), []);
  assert.deepEqual(outcome.children, [cm('t-page')]);
  assert.deepEqual(outcome.desiredStatus, { pages: 1 });
  assert.equal(outcome.requeue, 1500);
});

test('no status and no resync leave the status alone and wait for a change', () => {
  const outcome = plugin(recorder()).handleReconcile(JSON.stringify(thing()), []);
  assert.equal(outcome.desiredStatus, undefined);
  assert.equal(outcome.requeue, 'done');
});

test('a response of the wrong shape is a plugin bug', () => {
  for (const syncResponse of [[], { children: { a: 1 } }, { resyncAfterSeconds: -1 }]) {
    assert.throws(() => plugin(recorder({ syncResponse })).handleReconcile(JSON.stringify(thing()), []), TypeError);
  }
});

test('related resources become selections by name and by labels', () => {
  const hooks = recorder({
    relatedResources: [
      { apiVersion: 'v1', resource: 'configmaps', names: ['a', 'b'] },
      { apiVersion: 'v1', resource: 'configmaps', labelSelector: { matchLabels: { x: 'y' } } },
      { apiVersion: 'v1', resource: 'namespaces' },
    ],
  });
  assert.deepEqual(plugin(hooks).handleSelect(JSON.stringify(thing())), [
    Selection.byName(CONFIG_MAP, 'a'),
    Selection.byName(CONFIG_MAP, 'b'),
    Selection.byLabels(CONFIG_MAP, { matchLabels: { x: 'y' } }),
    Selection.byLabels(NAMESPACE, {}),
  ]);
  assert.deepEqual(hooks.requests[0][1].parent, thing());
});

test('a resource not declared related is refused, naming it', () => {
  const hooks = recorder({ relatedResources: [{ apiVersion: 'v1', resource: 'secrets', names: ['s'] }] });
  assert.throws(() => plugin(hooks).handleSelect(JSON.stringify(thing())), (e) => e instanceof PermanentError && e.message.includes('v1 secrets is not a declared related kind'));
});

test('without a customize hook nothing is selected', () => {
  const Bare = compositeController({ name: 'x', parent: PARENT, sync: recorder().sync });
  assert.deepEqual(new Bare().handleSelect(JSON.stringify(thing())), []);
  assert.equal(new Bare().finalizer, undefined);
});

test('names with a label selector read only the named objects that match', () => {
  const hooks = recorder({ relatedResources: [{ apiVersion: 'v1', resource: 'configmaps', names: ['a', 'b'], labelSelector: { matchLabels: { x: 'y' } } }] });
  plugin(hooks).handleReconcile(JSON.stringify(thing()), [], [JSON.stringify(cm('a', { x: 'y' })), JSON.stringify(cm('b', { x: 'z' }))]);
  assert.deepEqual(Object.keys(syncRequest(hooks).related['ConfigMap.v1']), ['a']);
});

test('a finalize hook declares a finalizer and sees finalizing true', () => {
  const hooks = recorder({ finalizeResponse: { finalized: true } });
  const p = plugin(hooks, { finalize: hooks.finalize });
  assert.equal(p.finalizer, 'metacontroller.weir.dev/thing-controller');
  assert.ok(p.handleFinalize(JSON.stringify(thing()), [], /** @type {string} */ (p.finalizer)).isComplete);
  assert.equal(hooks.requests.find(([h]) => h === 'finalize')?.[1].finalizing, true);
});

test("a finalize response's children and status are held while the finalizer is, until finalized", () => {
  const scaled = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'pods' }, data: { replicas: '0' } };
  const hooks = recorder({ finalizeResponse: { children: [scaled], status: { phase: 'ScalingDown' }, finalized: false } });
  const p = plugin(hooks, { finalize: hooks.finalize });
  const step = p.handleFinalize(JSON.stringify(thing()), [], 'f');
  assert.deepEqual(step.children, [scaled]);
  assert.deepEqual(step.desiredStatus, { phase: 'ScalingDown' });
  assert.ok(!step.isComplete);
  assert.equal(step.againAfterMs, FINALIZE_RETRY_SECONDS * 1000);
  hooks.finalizeResponse = { children: [scaled], finalized: true };
  const last = p.handleFinalize(JSON.stringify(thing()), [], 'f');
  assert.ok(last.isComplete);
  assert.deepEqual(last.children, [scaled]);
  hooks.finalizeResponse = { finalized: true };
  assert.equal(p.handleFinalize(JSON.stringify(thing()), [], 'f').children, undefined, 'no children: left as they are');
});

test('not finalized asks again after the resync or the default', () => {
  const hooks = recorder({ finalizeResponse: { finalized: false, resyncAfterSeconds: 2 } });
  const p = plugin(hooks, { finalize: hooks.finalize });
  assert.equal(p.handleFinalize(JSON.stringify(thing()), [], 'f').againAfterMs, 2000);
  hooks.finalizeResponse = {};
  assert.equal(p.handleFinalize(JSON.stringify(thing()), [], 'f').againAfterMs, FINALIZE_RETRY_SECONDS * 1000);
});
