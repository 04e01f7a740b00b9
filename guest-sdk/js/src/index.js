// Write Weir reconciler plugins in JavaScript: the public API of the SDK.
//
//   import { Reconciler, Kind, Outcome, PermanentError, configMap, CONFIG_MAP } from '@weir/guest-sdk';
//
//   export default class Greeter extends Reconciler {
//     name = 'greeter';
//     parent = new Kind('example.dev', 'v1', 'Greeter', 'greeters');
//     children = [CONFIG_MAP];
//     reconcile(parent) {
//       if (!parent.spec?.text) throw new PermanentError('spec.text is required');
//       return Outcome.apply([configMap(parent.name, { text: parent.spec.text })]);
//     }
//   }
//
// A plugin that reads objects it does not own declares them in `related` and
// picks them per parent in `select(parent)`; they arrive in `children.related`.
//
// `weir-js build` (bin/componentize.js) turns it into a component; see README.md.

export {
  CLUSTER,
  CONFIG_MAP,
  Children,
  DEPLOYMENT,
  Kind,
  KubeObject,
  NAMESPACE,
  Objects,
  SECRET,
  SERVICE,
  clusterOf,
  condition,
  configMap,
  container,
  deployment,
  inCluster,
  service,
} from './objects.js';
export { LabelSelector, Selection } from './selection.js';
export { Cleanup, Outcome, PermanentError, ReconcileError, TransientError } from './outcome.js';
export { Reconciler } from './reconciler.js';
export { sha256, sha256Hex } from './sha256.js';
export * as log from './log.js';

/** @typedef {import('./objects.js').Resource} Resource A parent or child object: `KubeObject` plus its JSON fields. */
