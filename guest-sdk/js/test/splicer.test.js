import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildComponent, defaultWit, spliceStats } from '../bin/componentize.js';
import { KEEP, cacheDir, spliceKey, wrapSplicer } from '../bin/splicer.js';

const sdkDir = fileURLToPath(new URL('..', import.meta.url));
const PLUGIN = `import { CONFIG_MAP, Kind, Outcome, Reconciler, configMap } from '@weir/guest-sdk';
export default class Hello extends Reconciler {
  name = 'hello';
  version = '0.1.0';
  parent = new Kind('example.dev', 'v1', 'Hello', 'hellos');
  children = [CONFIG_MAP];
  reconcile(parent) {
    return Outcome.apply([configMap(parent.name, { message: 'hello' })]);
  }
}
`;

/** A temporary directory, removed after the test. */
function tempDir(t) {
  const dir = mkdtempSync(join(tmpdir(), 'weir-js-splicer-test-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A stand-in splicer whose splice is a function of its arguments, counting its calls. */
function fakeSplicer() {
  const calls = { splice: 0, stub: 0 };
  const splicer = {
    spliceBindings(engine, features, witWorld, witPath, worldName, debug) {
      calls.splice += 1;
      const wasm = new Uint8Array([...engine, features.length, debug ? 1 : 0]);
      return { wasm, jsBindings: `// ${worldName}`, exports: [['reconcile', { params: ['i32'], retptr: true, retsize: 8, paramptr: false }]], imports: [['log', 'log', 2]] };
    },
    stubWasi(engine) {
      calls.stub += 1;
      return engine;
    },
  };
  return { splicer, calls };
}

test('a splice is made once per set of inputs and read back from the cache after', (t) => {
  const dir = tempDir(t);
  const wit = join(dir, 'wit');
  cpSync(defaultWit, wit, { recursive: true });
  const { splicer, calls } = fakeSplicer();
  const stats = wrapSplicer(splicer, undefined, '0.0.0', () => join(dir, 'cache'));
  const args = [new Uint8Array([1, 2, 3]), ['stdio'], undefined, wit, 'reconciler', false];
  const made = splicer.spliceBindings(...args);
  const read = splicer.spliceBindings(...args);
  assert.equal(calls.splice, 1, 'the second splice is served from the cache');
  assert.deepEqual(stats, { hits: 1, misses: 1 });
  assert.deepEqual(read, made);

  // Any input the splice reads is part of the key: the engine, the features, the WIT files.
  splicer.spliceBindings(new Uint8Array([1, 2, 4]), ['stdio'], undefined, wit, 'reconciler', false);
  splicer.spliceBindings(new Uint8Array([1, 2, 3]), ['stdio', 'clocks'], undefined, wit, 'reconciler', false);
  writeFileSync(join(wit, 'reconciler.wit'), `${readFileSync(join(wit, 'reconciler.wit'), 'utf8')}\n// edited\n`);
  splicer.spliceBindings(...args);
  assert.equal(calls.splice, 4, 'a changed engine, feature list or WIT file is spliced again');
});

test('the cache keeps the newest entries only, and no cache directory means no cache', (t) => {
  const dir = tempDir(t);
  const { splicer, calls } = fakeSplicer();
  let cache = join(dir, 'cache');
  wrapSplicer(splicer, undefined, '0.0.0', () => cache);
  for (let i = 0; i < KEEP + 2; i++) splicer.spliceBindings(new Uint8Array([i]), [], undefined, undefined, 'w', false);
  const entries = readdirSync(cache).filter((name) => name.endsWith('.wasm'));
  assert.equal(entries.length, KEEP);
  cache = undefined;
  splicer.spliceBindings(new Uint8Array([0]), [], undefined, undefined, 'w', false);
  splicer.spliceBindings(new Uint8Array([0]), [], undefined, undefined, 'w', false);
  assert.equal(calls.splice, KEEP + 4);
});

test('the cache directory follows WEIR_JS_CACHE, then XDG_CACHE_HOME', () => {
  assert.equal(cacheDir({ WEIR_JS_CACHE: '/c' }), '/c');
  assert.equal(cacheDir({ XDG_CACHE_HOME: '/x' }), '/x/weir-js');
  assert.match(cacheDir({}), /\.cache\/weir-js$/);
});

test("a cached splice is byte for byte componentize-js's own, and a build from it makes a component", async (t) => {
  const dir = tempDir(t);
  const plugin = join(dir, 'hello.js');
  writeFileSync(plugin, PLUGIN);
  const cache = join(dir, 'cache');
  const before = { ...spliceStats };
  await buildComponent({ plugin, out: join(dir, 'first.wasm'), cache });
  await buildComponent({ plugin, out: join(dir, 'second.wasm'), cache });
  assert.deepEqual(spliceStats, { hits: before.hits + 1, misses: before.misses + 1 });
  const second = readFileSync(join(dir, 'second.wasm'));
  assert.deepEqual([...second.subarray(0, 8)], [0, 0x61, 0x73, 0x6d, 0x0d, 0, 1, 0], 'a component');

  // The stored splice against one made now by componentize-js's splicer, uncached.
  const [key] = readdirSync(cache).filter((n) => n.endsWith('.json')).map((n) => n.slice(0, -'.json'.length));
  const stored = JSON.parse(readFileSync(join(cache, `${key}.json`), 'utf8'));
  const componentizeJs = new URL('.', import.meta.resolve('@bytecodealliance/componentize-js'));
  const { splicer } = await import(new URL('../lib/spidermonkey-embedding-splicer.js', componentizeJs).href);
  const engine = readFileSync(new URL('../lib/starlingmonkey_embedding.wasm', componentizeJs));
  const args = [engine, ['stdio', 'random', 'clocks'], undefined, defaultWit, 'reconciler', false];
  const { version } = await import('@bytecodealliance/componentize-js');
  assert.equal(spliceKey(version, args), key, 'the inputs componentize-js passed');
  const fresh = splicer.spliceBindings(...args);
  assert.ok(Buffer.from(fresh.wasm).equals(readFileSync(join(cache, `${key}.wasm`))), 'the same engine bytes');
  assert.equal(stored.jsBindings, fresh.jsBindings);
  assert.deepEqual(stored.exports, fresh.exports);
  assert.deepEqual(stored.imports, fresh.imports);

});

test("the splicer in a memory reserved at once answers what componentize-js's own does", () => {
  // Each in a fresh process: the WASI stubbing of the engine by the splicer as this SDK loads it
  // (its memory reserved before the first call) and as componentize-js alone loads it.
  const stub = (setup) => {
    const script = `${setup}
      const base = new URL('.', import.meta.resolve('@bytecodealliance/componentize-js'));
      const { splicer } = await import(new URL('../lib/spidermonkey-embedding-splicer.js', base).href);
      const engine = readFileSync(new URL('../lib/starlingmonkey_embedding.wasm', base));
      const out = splicer.stubWasi(engine, ['stdio', 'random', 'clocks'], undefined, ${JSON.stringify(defaultWit)}, 'reconciler');
      process.stdout.write(createHash('sha256').update(out).digest('hex'));`;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: sdkDir, encoding: 'utf8' });
    assert.equal(run.status, 0, run.stderr);
    return run.stdout;
  };
  const imports = "import { readFileSync } from 'node:fs'; import { createHash } from 'node:crypto';";
  const reserved = stub(`${imports} await import(${JSON.stringify(new URL('../bin/componentize.js', import.meta.url).href)});`);
  const plain = stub(`${imports} await import('@bytecodealliance/componentize-js');`);
  assert.match(reserved, /^[0-9a-f]{64}$/);
  assert.equal(reserved, plain);
});
