import { test } from 'node:test';
import assert from 'node:assert/strict';
import { exportReconciler } from '../src/guest.js';
import { CONFIG_MAP, Cleanup, Kind, Outcome, PermanentError, Reconciler, TransientError, configMap, log } from '../src/index.js';
import { setSink } from '../src/log.js';
import { entrySource } from '../bin/componentize.js';

class Plugin extends Reconciler {
  name = 'glue-test';
  version = '1.2.3';
  parent = new Kind('example.dev', 'v1', 'Thing', 'things');
  children = [CONFIG_MAP];
  finalizer = 'example.dev/cleanup';

  /** @param {import('../src/index.js').Resource} parent */
  reconcile(parent) {
    const mode = parent.spec.mode;
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
    finalizer: 'example.dev/cleanup',
    crd: undefined,
  });
});

test('reconcile returns children as JSON and requeue as a variant with a BigInt', () => {
  const { glue, request } = setup();
  const plain = glue.reconcile(request('plain'));
  assert.equal(plain.tag, 'ok');
  assert.deepEqual(plain.val?.children?.map((c) => JSON.parse(c)), [configMap('c', { k: 'ü' })]);
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

test('finalize maps cleanup to the variant', () => {
  const { glue } = setup();
  const parent = (/** @type {string} */ mode) => JSON.stringify({ metadata: { name: 't' }, spec: { mode } });
  assert.deepEqual(glue.finalize({ parent: parent('wait'), children: [], finalizer: 'f' }), { tag: 'ok', val: { tag: 'again-after', val: 2000n } });
  assert.deepEqual(glue.finalize({ parent: parent('done'), children: [], finalizer: 'f' }), { tag: 'ok', val: { tag: 'complete' } });
});

test('the generated entry imports log as a default import and exports the three functions', () => {
  const source = entrySource('/plugins/x/src/x.js');
  assert.match(source, /^import log from 'log';$/m);
  for (const name of ['describe', 'reconcile', 'finalize']) assert.match(source, new RegExp(`^export function ${name}\\(`, 'm'));
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
