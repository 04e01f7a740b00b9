// The Blog's rules that the shared fixtures do not pin one by one.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CONFIG_MAP, KubeObject, PermanentError, Selection, log } from '@weir/guest-sdk';
import Blog, { blogSpec, page, pageHash } from '../src/blog.js';

/** @param {string} name @param {Record<string, any>} spec */
const blog = (name, spec) => ({ apiVersion: 'weir.dev/v1alpha1', kind: 'Blog', metadata: { name, namespace: 'default' }, spec });

/** @param {any} parent @param {any[]} [observed] */
const reconcile = (parent, observed = []) => new Blog().handleReconcile(JSON.stringify(parent), observed.map((o) => JSON.stringify(o)));

/** @param {any} parent @param {string} fragment */
function assertPermanent(parent, fragment) {
  assert.throws(
    () => reconcile(parent),
    (e) => e instanceof PermanentError && e.message.includes(fragment),
    `expected a permanent error containing "${fragment}"`,
  );
}

test('page hash known answers from the README', () => {
  assert.equal(pageHash(page('My Blog')), '6d2f490c2a7e4282');
  assert.equal(pageHash(page('Hello')), 'f9c59828cafddb46');
});

test('the title is escaped like html.escape with quotes', () => {
  assert.ok(page(`a & b <c> "d" 'e'`).includes('<h1>a &amp; b &lt;c&gt; &quot;d&quot; &#x27;e&#x27;</h1>'));
});

test('a name that cannot name a Service is refused', () => {
  for (const name of ['My-Blog', '1blog', 'blog-', 'b'.repeat(64), '', 'blog\n']) assertPermanent(blog(name, { title: 'T' }), 'cannot name a Service');
  assert.equal(reconcile(blog('b'.repeat(63), { title: 'T' })).children.length, 3);
});

test('empty title, negative replicas and empty image are refused in the README order', () => {
  assertPermanent(blog('my-blog', { title: '' }), 'Blog my-blog: spec.title must not be empty');
  assertPermanent(blog('my-blog', { title: 'T', replicas: -3 }), 'Blog my-blog: spec.replicas must be >= 0, not -3');
  assertPermanent(blog('my-blog', { title: 'T', image: '' }), 'Blog my-blog: spec.image must not be empty');
  assertPermanent(blog('my-blog', { title: '', replicas: -1 }), 'spec.title');
});

test('wrong types are refused like the typed Rust decode', () => {
  assertPermanent(blog('my-blog', { title: 7 }), 'spec.title');
  assertPermanent(blog('my-blog', { title: 'T', replicas: '2' }), 'spec.replicas');
  assertPermanent(blog('my-blog', { title: 'T', replicas: true }), 'spec.replicas');
  assertPermanent(blog('my-blog', { title: 'T', replicas: 2 ** 31 }), 'spec.replicas');
  assertPermanent(blog('my-blog', { title: 'T', image: null }), 'spec.image');
  assertPermanent({ metadata: { name: 'b', namespace: 'ns' } }, 'Blog ns/b is invalid: missing field `spec`');
});

test('unknown fields are ignored and defaults applied', () => {
  assert.deepEqual(blogSpec(new KubeObject(blog('b', { title: 'T', colour: 'red' }))), { title: 'T', replicas: 1, image: 'nginx:1.27' });
});

test('ready counts the observed Deployment of the same name only', () => {
  const other = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'other' }, status: { readyReplicas: 9 } };
  const mine = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'my-blog' }, status: { readyReplicas: 3 } };
  const status = /** @type {any} */ (reconcile(blog('my-blog', { title: 'T', replicas: 3 }), [other, mine]).desiredStatus);
  assert.equal(status.readyReplicas, 3);
  assert.equal(status.conditions[0].status, 'True');
  assert.equal(/** @type {any} */ (reconcile(blog('my-blog', { title: 'T', replicas: 3 }), [other]).desiredStatus).readyReplicas, 0);
});

test('observedGeneration is omitted when the parent has none; zero replicas is ready at once', () => {
  const status = /** @type {any} */ (reconcile(blog('my-blog', { title: 'T', replicas: 0 })).desiredStatus);
  assert.ok(!('observedGeneration' in status));
  assert.deepEqual([status.conditions[0].status, status.conditions[0].message], ['True', '0 of 0 replicas ready']);
});

test('finalize completes, logs one line, and still decodes the parent', () => {
  /** @type {string[][]} */
  const logged = [];
  log.setSink((level, message) => logged.push([level, message]));
  try {
    const cleanup = new Blog().handleFinalize(JSON.stringify(blog('my-blog', { title: 'T' })), [], 'weir.dev/blog-cleanup');
    assert.ok(cleanup.isComplete);
    assert.equal(logged.length, 1);
    assert.match(logged[0][1], /^Blog my-blog deleted/);
  } finally {
    log.setSink(undefined);
  }
  assert.throws(() => new Blog().handleFinalize(JSON.stringify(blog('my-blog', {})), [], 'f'), PermanentError);
});

test('the README example with a theme and two posts', () => {
  const posts = [
    { title: 'Hello', body: 'It works.' },
    { title: 'Fish & Chips', body: '' },
  ];
  assert.equal(
    page('My Blog', 'h1 { color: red; }', posts),
    '<!DOCTYPE html>\n<html>\n<head><meta charset="utf-8"><title>My Blog</title><style>h1 { color: red; }</style></head>\n' +
      '<body><h1>My Blog</h1>\n<article><h2>Hello</h2><p>It works.</p></article>\n<article><h2>Fish &amp; Chips</h2><p></p></article>\n</body>\n</html>\n',
  );
});

test('CSS cannot close the style element', () => {
  assert.ok(page('T', 'a</style>b').includes('<style>a\\3c /style>b</style>'));
});

/** @param {string} name @param {Record<string, string>} labels @param {Record<string, string>} data */
const configMap = (name, labels, data) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'default', labels }, data });

test('a Blog without theme or posts selects nothing', () => {
  assert.deepEqual(new Blog().handleSelect(JSON.stringify(blog('b', { title: 'T' }))), []);
});

test('select decodes the parent like reconcile', () => {
  const bad = blog('b', { title: 'T', postsSelector: { matchExpressions: [{ key: 'a', operator: 'Near' }] } });
  assert.throws(() => new Blog().handleSelect(JSON.stringify(bad)), (e) => e instanceof PermanentError && e.message.includes('spec.postsSelector.matchExpressions[0].operator'));
  assert.throws(() => new Blog().handleSelect(JSON.stringify(blog('b', { title: 'T', theme: 3 }))), PermanentError);
});

test('select asks for the theme by name, then the posts by selector', () => {
  const parent = blog('b', { title: 'T', theme: 'dark', postsSelector: { matchLabels: { blog: 'b' } } });
  assert.deepEqual(new Blog().handleSelect(JSON.stringify(parent)), [
    Selection.byName(CONFIG_MAP, 'dark'),
    Selection.byLabels(CONFIG_MAP, { matchLabels: { blog: 'b' } }),
  ]);
});

test('the theme itself is a post only if the selector matches it', () => {
  const parent = blog('b', { title: 'T', theme: 'dark', postsSelector: { matchLabels: { blog: 'b' } } });
  const related = [configMap('dark', {}, { 'style.css': 'x', title: 'not a post' }), configMap('p', { blog: 'b' }, { title: 'Post' })];
  const outcome = new Blog().handleReconcile(JSON.stringify(parent), [], related.map((o) => JSON.stringify(o)));
  const text = /** @type {any} */ (outcome.children[0]).data['index.html'];
  assert.ok(text.includes('<style>x</style>'));
  assert.equal(text.split('<article>').length - 1, 1);
});

test('a theme that appears makes the Blog ready and rolls the page', () => {
  const parent = JSON.stringify(blog('b', { title: 'T', theme: 'dark' }));
  const missing = new Blog().handleReconcile(parent, [], []);
  const found = new Blog().handleReconcile(parent, [], [JSON.stringify(configMap('dark', {}, { 'style.css': 'x' }))]);
  assert.equal(/** @type {any} */ (missing.desiredStatus).conditions[0].reason, 'ThemeNotFound');
  assert.equal(/** @type {any} */ (found.desiredStatus).conditions[0].reason, 'ReplicasNotReady');
  const hash = (/** @type {any} */ o) => o.children[1].spec.template.metadata.annotations['weir.dev/page-hash'];
  assert.notEqual(hash(missing), hash(found));
});
