import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CONFIG_MAP, Children, DEPLOYMENT, Kind, KubeObject, condition, configMap, container, deployment, service } from '../src/index.js';

test('apiVersion omits the empty core group', () => {
  assert.equal(CONFIG_MAP.apiVersion, 'v1');
  assert.equal(DEPLOYMENT.apiVersion, 'apps/v1');
});

test('a kind matches on apiVersion and kind', () => {
  const blog = new Kind('weir.dev', 'v1alpha1', 'Blog', 'blogs');
  assert.ok(blog.matches({ apiVersion: 'weir.dev/v1alpha1', kind: 'Blog' }));
  assert.ok(!blog.matches({ apiVersion: 'weir.dev/v1', kind: 'Blog' }));
  assert.ok(!blog.matches({ apiVersion: 'weir.dev/v1alpha1', kind: 'Post' }));
});

test('object accessors read metadata and never throw on missing fields', () => {
  const o = new KubeObject({ metadata: { name: 'b', namespace: 'ns', uid: 'u', generation: 3, labels: { a: '1' } }, spec: { title: 'T' } });
  assert.deepEqual([o.name, o.namespace, o.uid, o.generation], ['b', 'ns', 'u', 3]);
  assert.deepEqual(o.labels, { a: '1' });
  assert.equal(o.deleting, false);
  const empty = new KubeObject({});
  assert.equal(empty.name, undefined);
  assert.deepEqual(empty.annotations, {});
});

test('path walks nested fields and falls back', () => {
  const o = new KubeObject({ spec: { title: 'T' } });
  assert.equal(o.path('spec.title'), 'T');
  assert.equal(o.path('status.readyReplicas', 0), 0);
  assert.equal(o.path('spec.title.deeper', 'x'), 'x');
});

test('an object serializes as the JSON it was made from', () => {
  const raw = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { k: 'v' } };
  assert.deepEqual(JSON.parse(JSON.stringify(new KubeObject(raw))), raw);
});

test('a top-level field named like an accessor shadows it', () => {
  assert.equal(new KubeObject({ name: 'top' }).name, 'top');
});

test('children are found by kind and name', () => {
  const children = new Children([configMap('b', { k: 'v' }), deployment('b', { replicas: 1, selector: { app: 'b' }, containers: [container('web', 'nginx')] })]);
  assert.equal(children.get(DEPLOYMENT, 'b')?.spec.replicas, 1);
  assert.equal(children.get(CONFIG_MAP, 'b')?.name, 'b');
  assert.equal(children.get(CONFIG_MAP, 'other'), undefined);
  assert.equal(children.ofKind(DEPLOYMENT).length, 1);
  assert.equal(children.length, 2);
  assert.equal([...children].length, 2);
});

test('a deployment selects its pods and omits empty parts', () => {
  const d = deployment('web', {
    replicas: 2,
    selector: { app: 'web' },
    podLabels: { tier: 'front' },
    podAnnotations: { h: '1' },
    containers: [container('c', 'img', { ports: [{ containerPort: 80 }] })],
  });
  assert.equal(d.apiVersion, 'apps/v1');
  assert.deepEqual(d.metadata, { name: 'web' });
  assert.deepEqual(d.spec.selector, { matchLabels: { app: 'web' } });
  assert.deepEqual(d.spec.template.metadata, { labels: { app: 'web', tier: 'front' }, annotations: { h: '1' } });
  assert.deepEqual(d.spec.template.spec, { containers: [{ name: 'c', image: 'img', ports: [{ containerPort: 80 }] }] });
});

test('service and config map carry labels and annotations', () => {
  const s = service('web', { selector: { app: 'web' }, ports: [{ port: 80 }], labels: { app: 'web' }, type: 'ClusterIP' });
  assert.deepEqual(s.metadata, { name: 'web', labels: { app: 'web' } });
  assert.deepEqual(s.spec, { selector: { app: 'web' }, ports: [{ port: 80 }], type: 'ClusterIP' });
  assert.deepEqual(configMap('page', { 'index.html': '<h1>x</h1>' }, { annotations: { a: 'b' } }), {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'page', annotations: { a: 'b' } },
    data: { 'index.html': '<h1>x</h1>' },
  });
});

test('a condition is True or False and carries no clock', () => {
  assert.deepEqual(condition('Ready', true, 'Available', '2/2 ready'), { type: 'Ready', status: 'True', reason: 'Available', message: '2/2 ready' });
  assert.equal(condition('Ready', false, 'Progressing', '0/2').status, 'False');
});
