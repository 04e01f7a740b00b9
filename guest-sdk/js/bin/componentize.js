#!/usr/bin/env node
// The `weir-js` command: bundles a plugin module with the SDK and turns it into a WebAssembly component.
//
//   weir-js build plugins/blog-js/src/blog.js --crd deploy/crd/blog.yaml -o target/plugins/blog-js.wasm
//
// The plugin module default-exports its `Reconciler` subclass (or an
// instance). esbuild bundles it, with any npm packages it imports, into one
// ES module, because the component's engine cannot resolve bare specifiers;
// componentize-js then builds the component for world `reconciler`. `--crd`
// embeds the parent's CRD file, which `describe` then reports. componentize-js's splicer is
// wrapped (splicer.js): its splice of the contract's bindings, the same for every plugin, is
// cached between builds (`--no-cache` or WEIR_JS_CACHE=off: none), and its memory grown at once.
// The component is what componentize-js makes without them. `--dev` (or WEIR_DEV_BUILD=1, which
// `weir dev --watch` sets) makes a development build instead (src/dev.js, bin/dev.js): the plugin
// bundled alone and written into a runtime componentize-js made once, in well under a second.

import { build } from 'esbuild';
import { existsSync, realpathSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { bufferSize, findBuffer, patch, runtimeEntrySource, runtimeKey, SDK_MODULES, wrapBundle } from './dev.js';
import { cacheDir, importComponentizeJs, wrapSplicer } from './splicer.js';

const { componentizeJs, splicerCore } = await importComponentizeJs();
const { componentize } = componentizeJs;
/** The splice cache's directory for the build under way (undefined: none). */
let spliceCacheDir;
/** componentize-js's entry module (Node before 20.6 cannot tell it: then nothing is wrapped). */
const componentizeJsUrl = import.meta.resolve?.('@bytecodealliance/componentize-js');
/** componentize-js's splicer (the module its entry imports, loaded with it), wrapped. */
const splicer = componentizeJsUrl === undefined
  ? undefined
  : (await import(new URL('../lib/spidermonkey-embedding-splicer.js', componentizeJsUrl).href)).splicer;
/** How many splices were served from the cache and how many were made, in this process. */
export const spliceStats = splicer === undefined
  ? { hits: 0, misses: 0 }
  : wrapSplicer(splicer, splicerCore, componentizeJs.version, () => spliceCacheDir);

const sdkDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');
/** The contract version this SDK builds components for (its own version follows it). */
export const CONTRACT = '0.4.0';
// The contract: inside the package (`npm pack` copies it in), or the checkout's wit/ beside the SDK.
// Version 0.1.0 is wit/reconciler.wit; later versions have a directory of their own.
export const defaultWit = join(existsSync(join(sdkDir, 'wit')) ? join(sdkDir, 'wit') : resolve(sdkDir, '..', '..', 'wit'), CONTRACT);
const WORLD = 'reconciler';
// wasi:http would otherwise be imported; a plugin has no network.
const DISABLED_FEATURES = ['http', 'fetch-event'];

/**
 * The component's entry module: the only code that sees the `log` import.
 * @param {string} pluginPath
 * @param {string} [crd] the CRD text to embed
 */
export function entrySource(pluginPath, crd) {
  const options = crd === undefined ? '' : `, { crd: ${JSON.stringify(crd)} }`;
  return `import log from 'log';
import Plugin from ${JSON.stringify(pluginPath)};
import { exportReconciler } from '@weir/guest-sdk/guest';
const glue = exportReconciler(typeof Plugin === 'function' ? new Plugin() : Plugin, log${options});
export function describe() { return glue.describe(); }
export function selectRelated(parent) { return glue.selectRelated(parent); }
export function reconcile(request) { return glue.reconcile(request); }
export function finalize(request) { return glue.finalize(request); }
`;
}

/** Resolves the SDK to this checkout, so the plugin and the glue share one copy. */
const sdkAlias = {
  name: 'weir-guest-sdk',
  /** @param {import('esbuild').PluginBuild} b */
  setup(b) {
    // The modules a plugin may import, and the development runtime's own (src/dev.js).
    const modules = [...SDK_MODULES, '@weir/guest-sdk/dev'];
    b.onResolve({ filter: /^@weir\/guest-sdk(\/.*)?$/ }, (args) =>
      modules.includes(args.path) ? { path: join(sdkDir, 'src', `${args.path.split('/')[2] ?? 'index'}.js`) } : undefined);
  },
};

/**
 * Bundle and componentize `plugin`, writing the component to `out`.
 * `cache` is the splice cache's directory, or false for none (default: cacheDir(), unless
 * WEIR_JS_CACHE is `off`).
 * @param {{plugin: string, out: string, wit?: string, crd?: string, cache?: string | false}} opts
 */
export async function buildComponent({ plugin, out, wit = defaultWit, crd, cache = defaultCache() }) {
  const crdText = crd === undefined ? undefined : await readFile(crd, 'utf8');
  const component = await componentizeEntry({ entry: entrySource(resolve(plugin), crdText), resolveDir: dirname(resolve(plugin)), wit, cache });
  await writeFile(out, component);
  return component.length;
}

/** The splice cache's directory unless WEIR_JS_CACHE is `off`. */
function defaultCache() {
  return process.env.WEIR_JS_CACHE === 'off' ? false : cacheDir();
}

/**
 * The component of the entry module `entry` (its imports resolved from `resolveDir`).
 * @param {{entry: string, resolveDir: string, wit: string, cache: string | false}} opts
 */
async function componentizeEntry({ entry, resolveDir, wit, cache }) {
  const work = await mkdtemp(join(tmpdir(), 'weir-js-'));
  try {
    const bundle = join(work, 'plugin.js');
    await build({
      stdin: { contents: entry, resolveDir, sourcefile: 'weir-entry.js' },
      bundle: true,
      format: 'esm',
      platform: 'neutral',
      mainFields: ['module', 'main'],
      external: ['log'],
      outfile: bundle,
      plugins: [sdkAlias],
      logLevel: 'warning',
    });
    spliceCacheDir = cache === false ? undefined : cache;
    const { component } = await componentize({
      sourcePath: bundle,
      witPath: resolve(wit),
      worldName: WORLD,
      disableFeatures: DISABLED_FEATURES,
    });
    return component;
  } finally {
    spliceCacheDir = undefined;
    await rm(work, { recursive: true, force: true });
  }
}

/** Leaves the SDK's modules out of a development build's bundle: the runtime has them. */
const sdkExternal = {
  name: 'weir-guest-sdk-external',
  /** @param {import('esbuild').PluginBuild} b */
  setup(b) {
    b.onResolve({ filter: /^@weir\/guest-sdk(\/.*)?$/ }, (args) => {
      if (!SDK_MODULES.includes(args.path)) return { errors: [{ text: `${args.path} is not a module of the SDK (${SDK_MODULES.join(', ')})` }] };
      return { path: args.path, external: true };
    });
  },
};

/**
 * A development build of `plugin` (see src/dev.js): the plugin bundled alone, written into the
 * runtime cached in `.weir/js-dev/` beside `out` (made by componentize-js when missing).
 * @param {{plugin: string, out: string, wit?: string, crd?: string, cache?: string | false}} opts
 * @returns {Promise<{size: number, runtime: string, made: boolean}>}
 */
export async function buildDevComponent({ plugin, out, wit = defaultWit, crd, cache = defaultCache() }) {
  const crdText = crd === undefined ? undefined : await readFile(crd, 'utf8');
  const bundled = await build({
    entryPoints: [resolve(plugin)],
    bundle: true,
    format: 'cjs',
    platform: 'neutral',
    mainFields: ['module', 'main'],
    write: false,
    plugins: [sdkExternal],
    logLevel: 'warning',
  });
  const bundle = new TextEncoder().encode(wrapBundle(bundled.outputFiles[0].text, `bundle of ${relative(process.cwd(), resolve(plugin))}`));
  const size = bufferSize(bundle.length);
  const entry = runtimeEntrySource(size, crdText);
  const key = runtimeKey({ entry, sdkSrc: join(sdkDir, 'src'), wit: resolve(wit), componentizeJsVersion: componentizeJs.version, features: DISABLED_FEATURES });
  const dir = join(dirname(resolve(out)), '.weir', 'js-dev');
  const runtime = join(dir, `runtime-${key}.wasm`);
  let made = false;
  if (!existsSync(runtime)) {
    console.error(`weir-js build --dev: making the development runtime runtime-${key}.wasm (once per SDK, contract and CRD)`);
    const component = await componentizeEntry({ entry, resolveDir: sdkDir, wit, cache });
    await mkdir(dir, { recursive: true });
    for (const old of await readdir(dir)) await rm(join(dir, old), { force: true });
    await writeFile(`${runtime}.part`, component);
    await rename(`${runtime}.part`, runtime);
    made = true;
  }
  const component = await readFile(runtime);
  await writeFile(out, patch(component, findBuffer(component, size), size, bundle));
  return { size: component.length, runtime: `runtime-${key}.wasm`, made };
}

async function main() {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      out: { type: 'string', short: 'o' },
      wit: { type: 'string' },
      crd: { type: 'string' },
      'no-cache': { type: 'boolean' },
      dev: { type: 'boolean', default: process.env.WEIR_DEV_BUILD === '1' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help || positionals.length !== 2 || positionals[0] !== 'build' || !values.out) {
    console.error(`usage: weir-js build <plugin.js> -o <component.wasm> [--crd <file>] [--wit <dir>] [--no-cache] [--dev] (default wit: ${defaultWit}; splice cache: ${cacheDir()})`);
    process.exit(values.help ? 0 : 2);
  }
  const noCache = values['no-cache'] ? { cache: /** @type {false} */ (false) } : {};
  const opts = { plugin: positionals[1], out: values.out, wit: values.wit, crd: values.crd, ...noCache };
  if (values.dev) {
    const { size, runtime } = await buildDevComponent(opts);
    console.error(`weir-js build --dev: wrote ${values.out} (${size} bytes, the plugin's bundle in ${runtime})`);
  } else {
    console.error(`wrote ${values.out} (${await buildComponent(opts)} bytes)`);
  }
}

if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((e) => {
    console.error(e instanceof Error ? e.message : e);
    process.exit(1);
  });
}
