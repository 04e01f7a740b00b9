import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CONFIG_MAP, Kind, NAMESPACE, PermanentError, Selection } from '../src/index.js';
import { compositeController } from '../src/metacontroller.js';

const PROPAGATION = new Kind('example.dev', 'v1', 'Propagation', 'propagations', false);
const propagation = () => ({ apiVersion: 'example.dev/v1', kind: 'Propagation', metadata: { name: 'p' }, spec: {} });
/** @param {string} namespace @param {string} name */
const cm = (namespace, name) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace } });
/** @param {string} name @param {Record<string, string>} [labels] */
const ns = (name, labels = {}) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } });

/** Webhook functions as Metacontroller calls them, recording each sync request. @param {any[]} [relatedResources] */
function recorder(relatedResources = []) {
  /** @type {any[]} */
  const syncs = [];
  return {
    syncs,
    sync: (/** @type {any} */ r) => (syncs.push(structuredClone(r)), { children: [] }),
    customize: () => ({ relatedResources }),
  };
}

/** @param {ReturnType<typeof recorder>} hooks @param {string} hookVersion @param {Kind[]} [related] */
function plugin(hooks, hookVersion, related = [CONFIG_MAP, NAMESPACE]) {
  const Plugin = compositeController({ name: 'propagator', parent: PROPAGATION, children: [CONFIG_MAP], related, sync: hooks.sync, customize: hooks.customize, hookVersion });
  return new Plugin();
}

test("v2 keys namespaced objects namespace/name and cluster-scoped ones by name; v1 too under a cluster-scoped parent", () => {
  const hooks = recorder();
  const children = [cm('team-a', 'shared'), cm('team-b', 'shared')].map((o) => JSON.stringify(o));
  const related = [cm('source', 'settings'), ns('team-a')].map((o) => JSON.stringify(o));
  plugin(hooks, 'v2').handleReconcile(JSON.stringify(propagation()), children, related);
  assert.deepEqual(Object.keys(hooks.syncs[0].children['ConfigMap.v1']), ['team-a/shared', 'team-b/shared']);
  assert.deepEqual(Object.keys(hooks.syncs[0].related['ConfigMap.v1']), ['source/settings']);
  assert.deepEqual(Object.keys(hooks.syncs[0].related['Namespace.v1']), ['team-a']);
  assert.deepEqual(hooks.syncs[0].controller.spec.hooks.sync, { version: 'v2' });
  plugin(hooks, 'v1').handleReconcile(JSON.stringify(propagation()), [], related);
  assert.deepEqual(Object.keys(hooks.syncs[1].related['ConfigMap.v1']), ['source/settings']);
  assert.deepEqual(hooks.syncs[1].controller.spec.hooks.sync, { version: 'v1' });
  assert.throws(() => plugin(hooks, 'v3'), TypeError);
});

test("a rule's namespace selects there, and a namespaceSelector keeps objects in matching namespaces", () => {
  const named = recorder([{ apiVersion: 'v1', resource: 'configmaps', namespace: 'source', names: ['settings'] }]);
  assert.deepEqual(plugin(named, 'v2').handleSelect(JSON.stringify(propagation())), [Selection.byName(CONFIG_MAP, 'settings', { namespace: 'source' })]);
  const rule = { apiVersion: 'v1', resource: 'configmaps', labelSelector: { matchLabels: { shared: 'yes' } }, namespaceSelector: { matchLabels: { team: 'a' } } };
  const selected = recorder([rule]);
  assert.deepEqual(plugin(selected, 'v2').handleSelect(JSON.stringify(propagation())), [
    Selection.byLabels(CONFIG_MAP, { matchLabels: { shared: 'yes' } }),
    Selection.byLabels(NAMESPACE, { matchLabels: { team: 'a' } }),
  ]);
  const related = [cm('team-a', 'x'), cm('team-b', 'x'), ns('team-a', { team: 'a' }), ns('team-b', { team: 'b' })].map((o) => JSON.stringify(o));
  plugin(selected, 'v2').handleReconcile(JSON.stringify(propagation()), [], related);
  assert.deepEqual(Object.keys(selected.syncs[0].related['ConfigMap.v1']), ['team-a/x']);
});

test('a namespaceSelector without Namespaces declared is a plugin bug naming the fix', () => {
  const hooks = recorder([{ apiVersion: 'v1', resource: 'configmaps', namespaceSelector: {} }]);
  assert.throws(
    () => plugin(hooks, 'v2', [CONFIG_MAP]).handleSelect(JSON.stringify(propagation())),
    (/** @type {any} */ e) => e instanceof PermanentError && e.message.includes('declare NAMESPACE in related'),
  );
});
