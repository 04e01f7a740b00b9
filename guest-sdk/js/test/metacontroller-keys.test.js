// How the Metacontroller adapter keys `children` and `related`: Metacontroller's rule, per hook
// version and parent scope.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CONFIG_MAP, Kind, KubeObject, NAMESPACE } from '../src/index.js';
import { compositeController, objectKey } from '../src/metacontroller.js';

const NAMESPACED = new Kind('example.dev', 'v1', 'Thing', 'things');
const CLUSTER_SCOPED = new Kind('example.dev', 'v1', 'Propagation', 'propagations', false);

/** @param {Kind} kind @param {string} [namespace] */
const parentOf = (kind, namespace) => ({ apiVersion: 'example.dev/v1', kind: kind.kind, metadata: { name: 'p', ...(namespace ? { namespace } : {}) }, spec: {} });
/** @param {string} namespace @param {string} name */
const cm = (namespace, name) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace }, data: { at: `${namespace}/${name}` } });
/** @param {string} name */
const ns = (name) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });

/**
 * The sync and finalize requests a plugin of `hookVersion` hands its hooks for `parent`. With
 * `cluster`, every object arrives placed in that cluster, as contract 0.4.0 hands it.
 * @param {Kind} parentKind @param {string | undefined} hookVersion @param {object} parent @param {object[]} children @param {object[]} related @param {string} [cluster]
 */
function requests(parentKind, hookVersion, parent, children, related, cluster) {
  /** @type {Record<string, any>} */
  const seen = {};
  const Plugin = compositeController({
    name: 'keys',
    parent: parentKind,
    children: [CONFIG_MAP],
    related: [CONFIG_MAP, NAMESPACE],
    sync: (r) => ((seen.sync = structuredClone(r)), { children: [] }),
    customize: () => ({ relatedResources: [] }),
    finalize: (r) => ((seen.finalize = structuredClone(r)), { finalized: true }),
    hookVersion,
  });
  const plugin = new Plugin();
  const json = (/** @type {object[]} */ list) =>
    list.map((o) => (cluster === undefined ? JSON.stringify(o) : { cluster, object: JSON.stringify(o) }));
  plugin.handleReconcile(JSON.stringify(parent), json(children), json(related), cluster);
  plugin.handleFinalize(JSON.stringify(parent), json(children), 'metacontroller.weir.dev/keys', json(related), cluster);
  return [seen.sync, seen.finalize];
}

test("a namespaced parent's v1 hooks key objects of its namespace by name and others namespace/name", () => {
  const related = [cm('team', 'local'), cm('shared', 'source'), ns('team')];
  for (const request of requests(NAMESPACED, 'v1', parentOf(NAMESPACED, 'team'), [cm('team', 'copy')], related)) {
    assert.deepEqual(request.children, { 'ConfigMap.v1': { copy: cm('team', 'copy') } });
    assert.deepEqual(request.related, { 'ConfigMap.v1': { local: cm('team', 'local'), 'shared/source': cm('shared', 'source') }, 'Namespace.v1': { team: ns('team') } });
  }
});

test("a namespaced parent's v2 hooks key every namespaced object namespace/name and a cluster-scoped one by name", () => {
  const related = [cm('team', 'local'), cm('shared', 'source'), ns('team')];
  for (const request of requests(NAMESPACED, 'v2', parentOf(NAMESPACED, 'team'), [cm('team', 'copy')], related)) {
    assert.deepEqual(request.children, { 'ConfigMap.v1': { 'team/copy': cm('team', 'copy') } });
    assert.deepEqual(request.related, { 'ConfigMap.v1': { 'team/local': cm('team', 'local'), 'shared/source': cm('shared', 'source') }, 'Namespace.v1': { team: ns('team') } });
  }
});

test("a cluster-scoped parent's v1 and v2 hooks key namespaced objects namespace/name and cluster-scoped ones by name", () => {
  const children = [cm('team-a', 'settings'), cm('team-b', 'settings')];
  const related = [cm('original', 'settings'), ns('team-a')];
  for (const version of ['v1', 'v2']) {
    for (const request of requests(CLUSTER_SCOPED, version, parentOf(CLUSTER_SCOPED), children, related)) {
      assert.deepEqual(request.children, { 'ConfigMap.v1': { 'team-a/settings': children[0], 'team-b/settings': children[1] } }, version);
      assert.deepEqual(request.related, { 'ConfigMap.v1': { 'original/settings': related[0] }, 'Namespace.v1': { 'team-a': ns('team-a') } }, version);
    }
  }
});

test('a v1 hook written for Metacontroller finds its source under a cluster-scoped parent and writes copies by namespace', async () => {
  // Metacontroller's ConfigMap propagation example, in short: v1 hooks, a cluster-scoped parent.
  const Plugin = compositeController({
    name: 'propagation',
    parent: CLUSTER_SCOPED,
    children: [CONFIG_MAP],
    related: [CONFIG_MAP],
    sync: async (r) => {
      const source = r.related['ConfigMap.v1']['original/settings'];
      const copies = ['team-a', 'team-b'].map((target) => ({ ...cm(target, 'settings'), data: source.data }));
      return { children: copies, status: { seen: Object.keys(r.children['ConfigMap.v1']).sort() } };
    },
  });
  const outcome = await new Plugin().handleReconcile(JSON.stringify(parentOf(CLUSTER_SCOPED)), [JSON.stringify(cm('team-a', 'settings'))], [JSON.stringify(cm('original', 'settings'))]);
  // Desired children are read back from their own metadata: each keeps the namespace it names.
  assert.deepEqual(
    outcome.children.map((/** @type {any} */ c) => [c.metadata.namespace, c.data]),
    [['team-a', { at: 'original/settings' }], ['team-b', { at: 'original/settings' }]],
  );
  assert.deepEqual(outcome.desiredStatus, { seen: ['team-a/settings'] });
});

test('the rule for each scope and version', () => {
  const namespaced = new KubeObject(cm('a', 'x'));
  const clusterScoped = new KubeObject(ns('x'));
  /** @type {[KubeObject, string | undefined, string, string][]} object, parent's namespace, hook version, key */
  const cases = [
    [namespaced, 'a', 'v1', 'x'],
    [namespaced, 'b', 'v1', 'a/x'],
    [namespaced, undefined, 'v1', 'a/x'],
    [clusterScoped, 'a', 'v1', 'x'],
    [clusterScoped, undefined, 'v1', 'x'],
    [namespaced, 'a', 'v2', 'a/x'],
    [namespaced, 'b', 'v2', 'a/x'],
    [namespaced, undefined, 'v2', 'a/x'],
    [clusterScoped, 'a', 'v2', 'x'],
    [clusterScoped, undefined, 'v2', 'x'],
  ];
  for (const [o, parentNamespace, version, key] of cases) assert.equal(objectKey(o, parentNamespace, version), key, `${o.namespace} under ${parentNamespace} (${version})`);
});

test("objects placed in the parent's cluster (contract 0.4.0) reach the hooks under the same keys", () => {
  const related = [cm('team', 'local')];
  for (const request of requests(NAMESPACED, undefined, parentOf(NAMESPACED, 'team'), [cm('team', 'copy')], related, 'local')) {
    assert.deepEqual(request.children, { 'ConfigMap.v1': { copy: cm('team', 'copy') } });
    assert.deepEqual(request.related, { 'ConfigMap.v1': { local: cm('team', 'local') }, 'Namespace.v1': {} });
  }
});
