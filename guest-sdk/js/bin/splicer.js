// componentize-js's splicer without the costs that do not depend on the plugin: its splice of the
// contract's bindings is cached between builds, and its memory is grown once instead of a page at a time.
//
// componentize-js runs a WebAssembly splicer in Node twice per build: `spliceBindings` puts the
// WIT world's bindings into its JavaScript engine, `stubWasi` replaces the engine's unused WASI
// imports after pre-initialisation. On a two-core machine they took 6-9 s of a 7-11 s build:
// - The splice depends only on the engine, the features, the WIT files, the world and the debug
//   flag, never on the plugin's source. It is kept on disk under a hash of all of them and of
//   componentize-js's version, and read back by a later build with the same inputs.
// - Each call needs ~40 times its input in memory (~480 MB for the 12 MB engine). A fresh
//   splicer's allocator takes it from `memory.grow` in small steps, and each grow of a wasm
//   memory in V8 costs a new ArrayBuffer and often a garbage collection: 2-4 s. Before its first
//   call, the splicer's allocator is handed that memory in one step (one allocation, shrunk
//   again, leaves the allocator a free block it then carves from).
// Neither changes what the splicer computes: a cached splice is byte for byte a fresh one, and
// `stubWasi` gives the same bytes in a memory grown either way (test/splicer.test.js).
//
// The cache directory is $WEIR_JS_CACHE, else $XDG_CACHE_HOME/weir-js, else ~/.cache/weir-js; it
// keeps the newest KEEP entries (in practice one per contract and componentize-js version). A
// cache that cannot be read or written costs only time: the splice runs as it would.

import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** Cache entries kept; older ones are removed when a new one is written. */
export const KEEP = 4;
/** Bumped when what a cache entry holds changes. */
const FORMAT = 1;
/** The splicer's memory use per byte of its input, with some margin (measured: ~40). */
const MEMORY_PER_INPUT_BYTE = 48;
/** The most memory handed to the splicer's allocator in one step. */
const MAX_RESERVE = 1536 * 1024 * 1024;
/** The splicer's export whose presence identifies its core instance. */
const SPLICER_EXPORT = 'local:spidermonkey-embedding-splicer/splicer#stub-wasi';

/**
 * The cache directory.
 * @param {NodeJS.ProcessEnv} [env]
 */
export function cacheDir(env = process.env) {
  if (env.WEIR_JS_CACHE) return env.WEIR_JS_CACHE;
  return join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'weir-js');
}

/**
 * Imports componentize-js, keeping the exports of the splicer's core instance (instantiated while
 * componentize-js loads) so that its allocator can be handed memory in one step. The modules jco
 * generated keep the `WebAssembly.instantiate` they found when loaded, here this wrapper, which
 * only looks at what each instantiation exports.
 * @returns {Promise<{componentizeJs: typeof import('@bytecodealliance/componentize-js'), splicerCore: WebAssembly.Exports | undefined}>}
 */
export async function importComponentizeJs() {
  const instantiate = WebAssembly.instantiate;
  /** @type {WebAssembly.Exports | undefined} */
  let splicerCore;
  WebAssembly.instantiate = /** @type {typeof WebAssembly.instantiate} */ (
    async function (/** @type {any[]} */ ...args) {
      const made = await instantiate.apply(WebAssembly, /** @type {any} */ (args));
      const exports = 'instance' in made ? made.instance.exports : made.exports;
      if (exports && SPLICER_EXPORT in exports) splicerCore = exports;
      return made;
    }
  );
  try {
    const componentizeJs = await import('@bytecodealliance/componentize-js');
    return { componentizeJs, splicerCore };
  } finally {
    WebAssembly.instantiate = instantiate;
  }
}

/**
 * Hands the splicer's allocator `bytes` of memory in one `memory.grow`: one allocation of that
 * size, shrunk in place to 8 bytes, leaves the rest as a free block the allocator carves later
 * requests from. Does nothing when the core instance is unknown or lacks what it needs.
 * @param {WebAssembly.Exports | undefined} core
 * @param {number} bytes
 */
export function reserveMemory(core, bytes) {
  const realloc = core?.cabi_realloc;
  const memory = core?.memory;
  if (typeof realloc !== 'function' || !(memory instanceof WebAssembly.Memory)) return;
  const size = Math.min(Math.max(0, Math.floor(bytes)), MAX_RESERVE);
  if (size === 0) return;
  const block = /** @type {number} */ (realloc(0, 0, 8, size));
  if (block !== 0) realloc(block, size, 8, 8);
}

/**
 * Feeds every file under `path` (a WIT file or directory) to `hash`: names and contents, in order.
 * @param {import('node:crypto').Hash} hash
 * @param {string} path
 * @param {string} [rel]
 */
function hashTree(hash, path, rel = '') {
  if (statSync(path).isDirectory()) {
    for (const name of readdirSync(path).sort()) hashTree(hash, join(path, name), `${rel}/${name}`);
  } else {
    const bytes = readFileSync(path);
    hash.update(`${rel}\0${bytes.length}\0`).update(bytes);
  }
}

/**
 * The key of one splice: a hash of everything spliceBindings reads.
 * @param {string} version componentize-js's version
 * @param {unknown[]} args spliceBindings' arguments: engine, features, witWorld, witPath, worldName, debug
 */
export function spliceKey(version, args) {
  const [engine, features, witWorld, witPath, worldName, debug] = args;
  const hash = createHash('sha256');
  const described = { format: FORMAT, version, features, witWorld, witPath: witPath !== undefined, worldName, debug };
  hash.update(JSON.stringify(described));
  hash.update(/** @type {Uint8Array} */ (engine));
  if (typeof witPath === 'string') hashTree(hash, witPath);
  return hash.digest('hex');
}

/**
 * The splice stored under `key`, if there is a complete one.
 * @param {string} dir
 * @param {string} key
 */
function lookup(dir, key) {
  try {
    const meta = JSON.parse(readFileSync(join(dir, `${key}.json`), 'utf8'));
    const wasm = new Uint8Array(readFileSync(join(dir, `${key}.wasm`)));
    if (wasm.length !== meta.wasmLength) return undefined;
    return { wasm, jsBindings: meta.jsBindings, exports: meta.exports, imports: meta.imports };
  } catch {
    return undefined;
  }
}

/**
 * Stores a splice under `key`, each file renamed into place and the metadata last (a reader never
 * takes a half-written entry), then removes all but the newest KEEP entries.
 * @param {string} dir
 * @param {string} key
 * @param {{wasm: Uint8Array, jsBindings: string, exports: unknown, imports: unknown}} result
 */
function store(dir, key, result) {
  mkdirSync(dir, { recursive: true });
  /** @type {(name: string, data: string | Uint8Array) => void} */
  const put = (name, data) => {
    const partial = join(dir, `.${name}.${process.pid}.partial`);
    writeFileSync(partial, data);
    renameSync(partial, join(dir, name));
  };
  put(`${key}.wasm`, result.wasm);
  const { jsBindings, exports, imports } = result;
  put(`${key}.json`, JSON.stringify({ wasmLength: result.wasm.length, jsBindings, exports, imports }));
  const entries = readdirSync(dir)
    .filter((name) => name.endsWith('.json') && !name.startsWith('.'))
    .map((name) => ({ key: name.slice(0, -'.json'.length), at: statSync(join(dir, name)).mtimeMs }))
    .sort((a, b) => b.at - a.at);
  for (const { key: old } of entries.slice(KEEP)) {
    rmSync(join(dir, `${old}.json`), { force: true });
    rmSync(join(dir, `${old}.wasm`), { force: true });
  }
}

/**
 * Wraps componentize-js's splicer (its module object, whose functions `componentize` calls
 * synchronously): `spliceBindings` answers from the cache in `dirOf()` and stores what it splices
 * there (no cache when `dirOf()` is undefined), and before the splicer's first call its allocator
 * is handed the memory that call will need.
 *
 * @param {{spliceBindings: (...args: any[]) => any, stubWasi: (...args: any[]) => any}} splicer
 * @param {WebAssembly.Exports | undefined} core the splicer's core instance (importComponentizeJs)
 * @param {string} version componentize-js's version
 * @param {() => string | undefined} dirOf the cache directory of the build under way
 * @returns {{hits: number, misses: number}} counts of the splices served from the cache and made
 */
export function wrapSplicer(splicer, core, version, dirOf) {
  const { spliceBindings: splice, stubWasi } = splicer;
  const stats = { hits: 0, misses: 0 };
  let reserved = false;
  /** Before the splicer's first call: its input's size tells the memory it will need. */
  const reserveFor = (/** @type {Uint8Array} */ input) => {
    if (reserved) return;
    reserved = true;
    try {
      reserveMemory(core, input.length * MEMORY_PER_INPUT_BYTE);
    } catch {
      // The allocator grows the memory itself as it would have.
    }
  };
  splicer.stubWasi = function (...args) {
    reserveFor(args[0]);
    return stubWasi.apply(this, args);
  };
  splicer.spliceBindings = function (...args) {
    const dir = dirOf();
    let key;
    try {
      key = dir === undefined ? undefined : spliceKey(version, args);
    } catch {
      key = undefined;
    }
    const hit = dir === undefined || key === undefined ? undefined : lookup(dir, key);
    if (hit) {
      stats.hits += 1;
      return hit;
    }
    stats.misses += 1;
    reserveFor(args[0]);
    const result = splice.apply(this, args);
    if (dir !== undefined && key !== undefined) {
      try {
        store(dir, key, result);
      } catch {
        // An unwritable cache only costs the next build the same time.
      }
    }
    return result;
  };
  return stats;
}
