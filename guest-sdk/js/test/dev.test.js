// The development build: the bundle buffer, the patch, and the plugin served from it (natively;
// the component itself is built and run by guest-sdk/scaffold-test.sh and tests/save-to-cluster.sh).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as sdk from '../src/index.js';
import * as guest from '../src/guest.js';
import * as metacontroller from '../src/metacontroller.js';
import { BLOCK, deferred, payload, sources } from '../src/dev.js';
import { bufferSize, findBuffer, patch, runtimeEntrySource, runtimeKey, SDK_MODULES, wrapBundle } from '../bin/dev.js';

const MODULES = { '@weir/guest-sdk': sdk, '@weir/guest-sdk/guest': guest, '@weir/guest-sdk/metacontroller': metacontroller };

/** A runtime-like component holding a patched buffer of `size` bytes, and the buffer's offset. */
function patched(bundleText, size = 1 << 14) {
  const runtime = Buffer.concat([Buffer.from('\0asm head'), Buffer.from(sources(size)), Buffer.from('tail')]);
  const at = findBuffer(runtime, size);
  const out = patch(runtime, at, size, new TextEncoder().encode(bundleText));
  assert.equal(out.length, runtime.length, 'the same length: every offset in the component holds');
  return new Uint8Array(out.subarray(at, at + size));
}

test('the buffer is BLOCK repeated, found once among other bytes', () => {
  const size = 1 << 12;
  const buffer = sources(size);
  assert.deepEqual(Buffer.from(buffer), Buffer.alloc(size, BLOCK));
  const component = Buffer.concat([Buffer.alloc(48, BLOCK), Buffer.from('x'.repeat(100)), buffer, Buffer.from('y')]);
  assert.equal(findBuffer(component, size), 148);
});

test('a runtime with no buffer or two is refused', () => {
  const size = 1 << 12;
  const one = Buffer.from(sources(size));
  for (const component of [Buffer.from('\0asm'.repeat(100)), Buffer.concat([one, Buffer.from('z'), one])]) {
    assert.throws(() => findBuffer(component, size), /not found once/);
  }
});

test('the patch is read back, and a bundle too large for the buffer is refused', () => {
  assert.equal(payload(patched('(function () {})')), '(function () {})');
  assert.throws(() => patch(Buffer.from(sources(64)), 0, 64, new Uint8Array(64)), /do not fit/);
  assert.equal(bufferSize(100), 1 << 20);
  assert.ok(bufferSize(1 << 20) >= 2 << 20);
  assert.throws(() => payload(sources(64)), /holds no plugin bundle/);
});

const PLUGIN = wrapBundle(`
const { Reconciler, Kind, CONFIG_MAP, Outcome, configMap } = require('@weir/guest-sdk');
class Greeter extends Reconciler {
  name = 'greeter';
  version = '0.0.1';
  parent = new Kind('example.dev', 'v1', 'Greeter', 'greeters');
  children = [CONFIG_MAP];
  reconcile(parent) { return Outcome.apply([configMap(parent.name, { text: 'from the buffer' })]); }
}
module.exports.default = Greeter;
`, 'bundle of greeter.js');

test('the plugin is evaluated from the buffer on first use, with the SDK the runtime holds', () => {
  let evaluated = 0;
  globalThis.weirDevTestCount = () => evaluated++;
  const buffer = patched(`weirDevTestCount();\n${PLUGIN}`);
  const glue = deferred(buffer, MODULES, () => {}, { crd: 'kind: CustomResourceDefinition\n' });
  assert.equal(evaluated, 0, 'nothing is evaluated before first use');
  const info = glue.describe();
  assert.equal(info.name, 'greeter');
  assert.equal(info.crd, 'kind: CustomResourceDefinition\n');
  glue.describe();
  assert.equal(evaluated, 1, 'once per instance');
  delete globalThis.weirDevTestCount;
});

test('a bundle that needs a module the runtime does not have says which', () => {
  const buffer = patched(wrapBundle("require('left-pad');", 'bundle of p.js'));
  assert.throws(() => deferred(buffer, MODULES, () => {}).describe(), /no module "left-pad"/);
});

test('the runtime entry imports every SDK module a bundle may ask for, and its key follows its inputs', () => {
  const entry = runtimeEntrySource(1 << 20, 'crd: 1\n');
  for (const m of SDK_MODULES) assert.ok(entry.includes(`from ${JSON.stringify(m)}`), m);
  assert.ok(entry.includes(`sources(${1 << 20})`));
  const dir = mkdtempSync(join(tmpdir(), 'weir-dev-key-'));
  writeFileSync(join(dir, 'a.wit'), 'package a:b;');
  const key = (/** @type {string} */ e, /** @type {string} */ v) =>
    runtimeKey({ entry: e, sdkSrc: dir, wit: dir, componentizeJsVersion: v, features: ['http'] });
  assert.equal(key(entry, '1'), key(entry, '1'));
  assert.notEqual(key(entry, '1'), key(entry, '2'));
  assert.notEqual(key(entry, '1'), key(runtimeEntrySource(1 << 20, 'crd: 2\n'), '1'));
});
