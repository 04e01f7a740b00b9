// The development build's pieces on the build side (src/dev.js is the component's side): the
// runtime's entry module, its cache key, and the patch that writes a plugin's bundle into a copy.
// `buildDevComponent` in componentize.js puts them together.

import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { BLOCK, HEADER, MAGIC } from '../src/dev.js';

/** The SDK modules a plugin's bundle gets from the runtime instead of bundling them. */
export const SDK_MODULES = ['@weir/guest-sdk', '@weir/guest-sdk/guest', '@weir/guest-sdk/metacontroller'];

/**
 * The runtime's entry module: the SDK loaded, a buffer of `size` bytes for the plugin's bundle.
 * @param {number} size
 * @param {string} [crd] the CRD text to embed
 */
export function runtimeEntrySource(size, crd) {
  const options = crd === undefined ? '' : `, { crd: ${JSON.stringify(crd)} }`;
  const imports = SDK_MODULES.map((m, i) => `import * as sdk${i} from ${JSON.stringify(m)};`).join('\n');
  const modules = SDK_MODULES.map((m, i) => `${JSON.stringify(m)}: sdk${i}`).join(', ');
  return `import log from 'log';
${imports}
import { deferred, sources } from '@weir/guest-sdk/dev';
const SOURCES = sources(${size});
const glue = deferred(SOURCES, { ${modules} }, log${options});
export function describe() { return glue.describe(); }
export function selectRelated(parent) { return glue.selectRelated(parent); }
export function reconcile(request) { return glue.reconcile(request); }
export function finalize(request) { return glue.finalize(request); }
`;
}

/**
 * The plugin's bundle (esbuild's CommonJS output) as the function expression the runtime calls,
 * named `name` in stack traces (its lines are the bundle's).
 * @param {string} cjs
 * @param {string} name
 */
export function wrapBundle(cjs, name) {
  return `(function (require, module, exports) {\n${cjs}\n})\n//# sourceURL=${name}\n`;
}

/**
 * The buffer a runtime gets: 1 MiB, or the next power of two of twice the bundle.
 * @param {number} bundleBytes
 */
export function bufferSize(bundleBytes) {
  let size = 1 << 20;
  while (size < 2 * (HEADER + bundleBytes)) size *= 2;
  return size;
}

/**
 * Hashes every file under `dir` (names and contents) into `hash`.
 * @param {import('node:crypto').Hash} hash
 * @param {string} dir
 */
function hashTree(hash, dir) {
  const walk = (/** @type {string} */ d) => {
    for (const name of readdirSync(d).sort()) {
      const path = join(d, name);
      if (statSync(path).isDirectory()) walk(path);
      else hash.update(`${relative(dir, path)}\0`).update(readFileSync(path));
    }
  };
  walk(dir);
}

/**
 * What a runtime is made of: its entry, the SDK's modules, the contract and componentize-js.
 * @param {{entry: string, sdkSrc: string, wit: string, componentizeJsVersion: string, features: string[]}} parts
 */
export function runtimeKey({ entry, sdkSrc, wit, componentizeJsVersion, features }) {
  const hash = createHash('sha256').update(entry).update(`\0${componentizeJsVersion}\0${features.join(',')}\0`);
  hashTree(hash, sdkSrc);
  hashTree(hash, wit);
  return hash.digest('hex').slice(0, 16);
}

/**
 * The offset of the runtime's buffer in its component: the one run of BLOCK `size` bytes long.
 * @param {Uint8Array} component
 * @param {number} size
 */
export function findBuffer(component, size) {
  const bytes = Buffer.from(component.buffer, component.byteOffset, component.byteLength);
  const run = Buffer.alloc(64 * BLOCK.length, BLOCK);
  const at = bytes.indexOf(run);
  const whole = Buffer.alloc(size, BLOCK);
  if (at < 0 || !bytes.subarray(at, at + size).equals(whole) || bytes.indexOf(run, at + size) >= 0) {
    throw new Error("weir-js build --dev: the runtime's bundle buffer is not found once in its component");
  }
  return at;
}

/**
 * A copy of the runtime `component` with `bundle` in its buffer at `at` (same length).
 * @param {Uint8Array} component
 * @param {number} at
 * @param {number} size
 * @param {Uint8Array} bundle
 */
export function patch(component, at, size, bundle) {
  if (HEADER + bundle.length > size) throw new Error(`${bundle.length} bytes of bundle do not fit a buffer of ${size}`);
  const out = Buffer.from(component);
  out.set(MAGIC, at);
  out.writeUInt32LE(bundle.length, at + MAGIC.length);
  out.set(bundle, at + HEADER);
  return out;
}
