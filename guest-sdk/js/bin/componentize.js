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
// The component is what componentize-js makes without them.

import { build } from 'esbuild';
import { existsSync, realpathSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
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
export const CONTRACT = '0.3.0';
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
    b.onResolve({ filter: /^@weir\/guest-sdk(\/(guest|metacontroller))?$/ }, (args) => ({
      path: join(sdkDir, 'src', `${args.path.split('/')[2] ?? 'index'}.js`),
    }));
  },
};

/**
 * Bundle and componentize `plugin`, writing the component to `out`.
 * `cache` is the splice cache's directory, or false for none (default: cacheDir(), unless
 * WEIR_JS_CACHE is `off`).
 * @param {{plugin: string, out: string, wit?: string, crd?: string, cache?: string | false}} opts
 */
export async function buildComponent({ plugin, out, wit = defaultWit, crd, cache = process.env.WEIR_JS_CACHE === 'off' ? false : cacheDir() }) {
  const crdText = crd === undefined ? undefined : await readFile(crd, 'utf8');
  const work = await mkdtemp(join(tmpdir(), 'weir-js-'));
  try {
    const bundle = join(work, 'plugin.js');
    await build({
      stdin: { contents: entrySource(resolve(plugin), crdText), resolveDir: dirname(resolve(plugin)), sourcefile: 'weir-entry.js' },
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
    await writeFile(out, component);
    return component.length;
  } finally {
    spliceCacheDir = undefined;
    await rm(work, { recursive: true, force: true });
  }
}

async function main() {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      out: { type: 'string', short: 'o' },
      wit: { type: 'string' },
      crd: { type: 'string' },
      'no-cache': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help || positionals.length !== 2 || positionals[0] !== 'build' || !values.out) {
    console.error(`usage: weir-js build <plugin.js> -o <component.wasm> [--crd <file>] [--wit <dir>] [--no-cache] (default wit: ${defaultWit}; splice cache: ${cacheDir()})`);
    process.exit(values.help ? 0 : 2);
  }
  const noCache = values['no-cache'] ? { cache: /** @type {false} */ (false) } : {};
  const size = await buildComponent({ plugin: positionals[1], out: values.out, wit: values.wit, crd: values.crd, ...noCache });
  console.error(`wrote ${values.out} (${size} bytes)`);
}

if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((e) => {
    console.error(e instanceof Error ? e.message : e);
    process.exit(1);
  });
}
