import { test } from 'node:test';
import assert from 'node:assert/strict';
import { exportReconciler } from '../src/guest.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CONFIG_MAP, Cleanup, Kind, NAMESPACE, Outcome, PermanentError, Reconciler, Selection, TransientError, configMap, inCluster, log } from '../src/index.js';
import { setSink } from '../src/log.js';
import { CONTRACT, defaultWit, entrySource } from '../bin/componentize.js';

class Plugin extends Reconciler {
  name = 'glue-test';
  version = '1.2.3';
  parent = new Kind('example.dev', 'v1', 'Thing', 'things');
  children = [CONFIG_MAP];
  related = [CONFIG_MAP, NAMESPACE];
  finalizer = 'example.dev/cleanup';

  /** @param {import('../src/index.js').Resource} parent */
  select(parent) {
    if (parent.spec?.mode === 'bad-selector') return [Selection.byLabels(CONFIG_MAP, { matchExpressions: [{ key: 'k', operator: 'Near' }] })];
    return [
      Selection.byName(CONFIG_MAP, 'theme'),
      Selection.byLabels(CONFIG_MAP, { matchLabels: { b: '2', a: '1' }, matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['x'] }] }),
      Selection.byName(NAMESPACE, 'default'),
    ];
  }

  /**
   * @param {import('../src/index.js').Resource} parent
   * @param {import('../src/index.js').Children} children
   */
  reconcile(parent, children) {
    const mode = parent.spec.mode;
    if (mode === 'related') {
      const theme = children.related.get(CONFIG_MAP, 'theme');
      return Outcome.apply([configMap('c', { css: theme?.data['style.css'], n: String(children.related.length) })]);
    }
    log.info(`mode ${mode}`);
    if (mode === 'permanent') throw new PermanentError('spec is invalid');
    if (mode === 'transient') throw new TransientError('not yet');
    if (mode === 'bug') return parent.spec.missing.field;
    if (mode === 'oom') throw 'out of memory';
    const outcome = Outcome.apply([configMap('c', { k: 'ü' })]);
    if (mode === 'status') outcome.status({ ok: true }).requeueAfter(1500);
    if (mode === 'now') outcome.requeueNow();
    return outcome;
  }

  /** @param {import('../src/index.js').Resource} parent */
  finalize(parent) {
    return parent.spec.mode === 'wait' ? Cleanup.againAfter(2000) : Cleanup.complete();
  }
}

function setup() {
  /** @type {[string, string][]} */
  const logged = [];
  const glue = exportReconciler(new Plugin(), (level, message) => logged.push([level, message]));
  const request = (/** @type {string} */ mode) => ({
    parent: JSON.stringify({ apiVersion: 'example.dev/v1', kind: 'Thing', metadata: { name: 't' }, spec: { mode } }),
    children: [],
    related: [],
  });
  return { glue, logged, request };
}

test.afterEach(() => setSink(undefined));

test('describe reports the plugin fields in WIT shape', () => {
  const { glue } = setup();
  assert.deepEqual(glue.describe(), {
    name: 'glue-test',
    version: '1.2.3',
    parent: { group: 'example.dev', version: 'v1', kind: 'Thing', plural: 'things', namespaced: true },
    children: [{ group: '', version: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true }],
    related: [
      { group: '', version: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true },
      { group: '', version: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false },
    ],
    finalizer: 'example.dev/cleanup',
    crd: undefined,
  });
});

test('a plugin without related kinds declares none and selects nothing', () => {
  class Plain extends Reconciler {
    name = 'plain';
    parent = new Kind('example.dev', 'v1', 'Thing', 'things');
    reconcile() {
      return Outcome.apply([]);
    }
  }
  const glue = exportReconciler(new Plain(), () => {});
  assert.deepEqual(glue.describe().related, []);
  assert.deepEqual(glue.selectRelated(JSON.stringify({ metadata: { name: 't' } })), { tag: 'ok', val: [] });
});

test('select returns names and label selectors in WIT shape', () => {
  const { glue } = setup();
  assert.deepEqual(glue.selectRelated(JSON.stringify({ metadata: { name: 't', namespace: 'ns' }, spec: {} })), {
    tag: 'ok',
    val: [
      { apiVersion: 'v1', kind: 'ConfigMap', namespace: undefined, cluster: undefined, selector: { tag: 'name', val: 'theme' } },
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        namespace: undefined,
        cluster: undefined,
        selector: {
          tag: 'labels',
          val: { matchLabels: [['a', '1'], ['b', '2']], matchExpressions: [{ key: 'tier', operator: 'not-in', values: ['x'] }] },
        },
      },
      { apiVersion: 'v1', kind: 'Namespace', namespace: undefined, cluster: undefined, selector: { tag: 'name', val: 'default' } },
    ],
  });
});

test('an unknown selector operator is a permanent error', () => {
  const { glue } = setup();
  const result = glue.selectRelated(JSON.stringify({ metadata: { name: 't' }, spec: { mode: 'bad-selector' } }));
  assert.equal(result.tag, 'err');
  assert.equal(result.val?.kind, 'permanent');
  assert.match(String(result.val?.message), /"Near"/);
});

test('reconcile finds the related objects in children.related', () => {
  const { glue } = setup();
  const parent = JSON.stringify({ metadata: { name: 't' }, spec: { mode: 'related' } });
  const theme = JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'theme' }, data: { 'style.css': 'h1{}' } });
  const result = glue.reconcile({ parent, cluster: 'hub', children: [], related: [{ cluster: 'hub', object: theme }] });
  assert.deepEqual(JSON.parse(/** @type {string} */ (result.val?.children?.[0]?.object)).data, { css: 'h1{}', n: '1' });
});

test('reconcile returns children as JSON and requeue as a variant with a BigInt', () => {
  const { glue, request } = setup();
  const plain = glue.reconcile(request('plain'));
  assert.equal(plain.tag, 'ok');
  assert.deepEqual(plain.val?.children?.map((c) => JSON.parse(c.object)), [configMap('c', { k: 'ü' })]);
  assert.deepEqual(plain.val?.children?.map((c) => c.cluster), [undefined], 'a child names no cluster unless placed');
  assert.equal(plain.val?.status, undefined);
  assert.deepEqual(plain.val?.requeue, { tag: 'done' });
  const withStatus = glue.reconcile(request('status'));
  assert.deepEqual(JSON.parse(/** @type {string} */ (withStatus.val?.status)), { ok: true });
  assert.deepEqual(withStatus.val?.requeue, { tag: 'after', val: 1500n });
  assert.deepEqual(glue.reconcile(request('now')).val?.requeue, { tag: 'now' });
});

test('reconcile errors come back as err with their kind', () => {
  const { glue, request } = setup();
  assert.deepEqual(glue.reconcile(request('permanent')), { tag: 'err', val: { kind: 'permanent', message: 'spec is invalid' } });
  assert.deepEqual(glue.reconcile(request('transient')), { tag: 'err', val: { kind: 'transient', message: 'not yet' } });
});

test('a plugin bug is a transient error with the stack logged', () => {
  const { glue, logged, request } = setup();
  const result = glue.reconcile(request('bug'));
  assert.equal(result.tag, 'err');
  assert.equal(result.val?.kind, 'transient');
  assert.match(String(result.val?.message), /^TypeError: /);
  assert.ok(logged.some(([level]) => level === 'error'));
});

test('running out of memory is rethrown, so the component traps as a Rust guest would', () => {
  const { glue, request } = setup();
  assert.throws(() => glue.reconcile(request('oom')), (e) => e === 'out of memory');
});

test('logs go to the host import', () => {
  const { glue, logged, request } = setup();
  glue.reconcile(request('plain'));
  assert.deepEqual(logged, [['info', 'mode plain']]);
});

test('finalize maps a cleanup that only waits or completes to an answer that applies nothing', () => {
  const { glue } = setup();
  const parent = (/** @type {string} */ mode) => JSON.stringify({ metadata: { name: 't' }, spec: { mode } });
  const nothing = { children: undefined, status: undefined };
  assert.deepEqual(glue.finalize({ parent: parent('wait'), cluster: 'hub', children: [], related: [], finalizer: 'f' }), { tag: 'ok', val: { ...nothing, finalized: false, requeue: { tag: 'after', val: 2000n } } });
  assert.deepEqual(glue.finalize({ parent: parent('done'), cluster: 'hub', children: [], related: [], finalizer: 'f' }), { tag: 'ok', val: { ...nothing, finalized: true, requeue: { tag: 'done' } } });
});

test('finalize maps a cleanup that acts to its children, status and whether it is done', () => {
  class Draining extends Reconciler {
    name = 'draining';
    version = '0.1.0';
    parent = new Kind('example.weir.dev', 'v1', 'Thing', 'things');
    children = [CONFIG_MAP];
    finalizer = 'example.weir.dev/drain';
    reconcile() {
      return Outcome.apply([]);
    }
    /** @param {import('../src/objects.js').KubeObject} parent @param {import('../src/objects.js').Children} observed */
    finalize(parent, observed) {
      const drained = configMap('t', { replicas: '0' });
      const cleanup = Cleanup.apply([drained]).status({ phase: 'Draining' });
      return observed.get(CONFIG_MAP, 't')?.data?.replicas === '0' ? cleanup.finalized() : cleanup;
    }
  }
  const glue = exportReconciler(new Draining(), () => {});
  const request = (/** @type {object[]} */ children) => ({
    parent: JSON.stringify({ metadata: { name: 't' } }),
    cluster: 'hub',
    children: children.map((c) => ({ cluster: 'hub', object: JSON.stringify(c) })),
    related: [],
    finalizer: 'f',
  });
  const first = glue.finalize(request([configMap('t', { replicas: '3' })]));
  assert.deepEqual(first, {
    tag: 'ok',
    val: {
      children: [{ cluster: undefined, object: JSON.stringify(configMap('t', { replicas: '0' })) }],
      status: '{"phase":"Draining"}',
      finalized: false,
      requeue: { tag: 'done' },
    },
  });
  const done = glue.finalize(request([configMap('t', { replicas: '0' })]));
  assert.equal(done.val.finalized, true);
  assert.equal(done.val.children?.length, 1);
});

test('components are built against the contract the package version follows', () => {
  assert.match(readFileSync(join(defaultWit, 'reconciler.wit'), 'utf8'), new RegExp(`^package weir:reconciler@${CONTRACT.replaceAll('.', '\\.')};$`, 'm'));
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  assert.deepEqual(pkg.version.split('.').slice(0, 2), CONTRACT.split('.').slice(0, 2));
});

test('the generated entry imports log as a default import and exports the four functions', () => {
  const source = entrySource('/plugins/x/src/x.js');
  assert.match(source, /^import log from 'log';$/m);
  for (const name of ['describe', 'selectRelated', 'reconcile', 'finalize']) assert.match(source, new RegExp(`^export function ${name}\\(`, 'm'));
});

test('an embedded CRD is what describe reports', () => {
  const glue = exportReconciler(new Plugin(), () => {}, { crd: 'kind: CustomResourceDefinition\n' });
  assert.equal(glue.describe().crd, 'kind: CustomResourceDefinition\n');
});

test('the generated entry embeds the CRD text as a string literal', () => {
  const crd = 'a: "quoted"\nb: `back` ${not} \\ 日本\n';
  const source = entrySource('/plugins/x/src/x.js', crd);
  const literal = /\{ crd: (.*) \}\);$/m.exec(source)?.[1];
  assert.equal(JSON.parse(/** @type {string} */ (literal)), crd);
  assert.doesNotMatch(entrySource('/plugins/x/src/x.js'), /crd/);
});

test('contract 0.4.0: objects are found in their own cluster, and children and selections name theirs', () => {
  class Spread extends Reconciler {
    name = 'spread';
    version = '0.1.0';
    parent = new Kind('example.weir.dev', 'v1', 'Thing', 'things');
    children = [CONFIG_MAP];
    related = [CONFIG_MAP];
    /** @param {import('../src/objects.js').KubeObject & {spec: any}} parent */
    select(parent) {
      return parent.spec.clusters.map((/** @type {string} */ c) => Selection.byName(CONFIG_MAP, 'settings').inCluster(c));
    }
    /** @param {import('../src/objects.js').KubeObject & {spec: any}} parent @param {import('../src/objects.js').Children} observed */
    reconcile(parent, observed) {
      const clusters = /** @type {string[]} */ (parent.spec.clusters);
      const seen = Object.fromEntries(clusters.map((c) => [c, observed.inCluster(c).get(CONFIG_MAP, 'c')?.data?.n ?? null]));
      const settings = Object.fromEntries(clusters.map((c) => [c, observed.related.inCluster(c).get(CONFIG_MAP, 'settings')?.data ?? {}]));
      const placed = clusters.map((c, i) => inCluster(c, configMap('c', { n: String(i) })));
      const status = { here: observed.cluster, seen, settings, local: observed.get(CONFIG_MAP, 'c') !== undefined, clusters: observed.clusters() };
      return Outcome.apply(placed).status(status);
    }
  }
  const glue = exportReconciler(new Spread(), () => {});
  const parent = JSON.stringify({ metadata: { name: 't', namespace: 'ns' }, spec: { clusters: ['member-a', 'member-b'] } });
  assert.deepEqual(
    glue.selectRelated(parent).val?.map((/** @type {any} */ s) => s.cluster),
    ['member-a', 'member-b'],
  );
  const cm = (/** @type {Record<string, string>} */ data) => JSON.stringify(configMap('c', data));
  const result = glue.reconcile({
    parent,
    cluster: 'hub',
    children: [{ cluster: 'member-b', object: cm({ n: '1' }) }, { cluster: 'hub', object: cm({ n: "hub's own" }) }],
    related: [{ cluster: 'member-a', object: JSON.stringify(configMap('settings', { tier: 'gold' })) }],
  });
  assert.equal(result.tag, 'ok');
  assert.deepEqual(result.val.children.map((/** @type {any} */ c) => c.cluster), ['member-a', 'member-b']);
  assert.deepEqual(result.val.children.map((/** @type {any} */ c) => JSON.parse(c.object).data), [{ n: '0' }, { n: '1' }]);
  assert.deepEqual(JSON.parse(result.val.status), {
    here: 'hub',
    seen: { 'member-a': null, 'member-b': '1' },
    settings: { 'member-a': { tier: 'gold' }, 'member-b': {} },
    local: true,
    clusters: ['hub', 'member-b'],
  });
});
