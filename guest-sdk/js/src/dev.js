// The development build's runtime: a component that takes the plugin's bundle as data.
//
// A production build (`weir-js build`) runs componentize-js on the plugin bundled with the SDK:
// 4-10 s on a small machine, on every save. A development build (`weir-js build --dev`, or
// WEIR_DEV_BUILD=1, which `weir dev --watch` sets) runs componentize-js once per contract, SDK
// and CRD to make a *runtime*: the same engine, SDK and contract, with a buffer of `size` bytes
// (`sources`) in place of the plugin. Each save then bundles the plugin alone (esbuild, the SDK
// left out) and writes the bundle into that buffer in a copy of the runtime (bin/dev.js): the
// same bytes at the same offsets, so the copy is a component like any other, loaded under the
// same sandbox, limits and admission.
//
// Inside the component, `deferred` stands for the exports until first used: it then evaluates the
// bundle, handing it the runtime's own SDK modules for its imports of `@weir/guest-sdk`, and serves
// the plugin through `exportReconciler` as a production build does. That happens once per
// instance, where a production build did it once at build time.
//
// The buffer: `size` bytes of the repeated BLOCK until the first patch, then MAGIC, the bundle's
// length (4 bytes, little-endian) and the bundle, UTF-8: a function expression taking
// `(require, module, exports)`. The repeated block is what the build finds in the runtime's memory
// snapshot; it is written in place, so no second copy of it is left in the snapshot.

import { exportReconciler } from './guest.js';

/** Fills the buffer until the first patch: 16 bytes whose run the build looks for. */
export const BLOCK = new TextEncoder().encode('weir-dev-source\x01');
/** Opens a patched buffer. */
export const MAGIC = new TextEncoder().encode('weir-src');
/** MAGIC and the bundle's length. */
export const HEADER = MAGIC.length + 4;

/**
 * A buffer of `size` bytes (a multiple of 16) holding BLOCK repeated, filled in place.
 * @param {number} size
 */
export function sources(size) {
  const buffer = new Uint8Array(size);
  buffer.set(BLOCK, 0);
  let filled = BLOCK.length;
  while (filled < size) {
    const step = Math.min(filled, size - filled);
    buffer.copyWithin(filled, 0, step);
    filled += step;
  }
  return buffer;
}

/**
 * The plugin's bundle written into `buffer` by the build.
 * @param {Uint8Array} buffer
 */
export function payload(buffer) {
  if (!MAGIC.every((b, i) => buffer[i] === b)) {
    throw new Error('this development runtime holds no plugin bundle (weir-js build --dev writes it)');
  }
  const length = new DataView(buffer.buffer, buffer.byteOffset + MAGIC.length, 4).getUint32(0, true);
  return new TextDecoder().decode(buffer.subarray(HEADER, HEADER + length));
}

/**
 * The component's exports, serving the plugin in `buffer` once first called.
 * @param {Uint8Array} buffer
 * @param {Record<string, unknown>} modules the SDK's modules by import specifier
 * @param {(level: string, message: string) => void} hostLog
 * @param {{ crd?: string }} [options]
 */
export function deferred(buffer, modules, hostLog, options = {}) {
  /** @type {ReturnType<typeof exportReconciler> | undefined} */
  let glue;
  const load = () => {
    if (glue === undefined) {
      const module = { exports: /** @type {any} */ ({}) };
      /** @param {string} name */
      const require = (name) => {
        if (Object.hasOwn(modules, name)) return modules[name];
        throw new Error(`the development runtime has no module ${JSON.stringify(name)} (bundle it, or build without --dev)`);
      };
      // Indirect eval: the bundle sees only the global scope and the three arguments.
      (0, eval)(payload(buffer))(require, module, module.exports);
      const Plugin = module.exports.default ?? module.exports;
      glue = exportReconciler(typeof Plugin === 'function' ? new Plugin() : Plugin, hostLog, options);
    }
    return glue;
  };
  return {
    describe: () => load().describe(),
    /** @param {any} parent */
    selectRelated: (parent) => load().selectRelated(parent),
    /** @param {any} request */
    reconcile: (request) => load().reconcile(request),
    /** @param {any} request */
    finalize: (request) => load().finalize(request),
  };
}
