// WebApp as a Weir plugin from async JavaScript hooks: the CompositeController declaration.
//
//   node guest-sdk/js/bin/componentize.js build plugins/metacontroller-scale-down-js/plugin.js \
//     --crd plugins/metacontroller-scale-down-js/crd.yaml -o target/plugins/metacontroller-scale-down-js.wasm

import { DEPLOYMENT, Kind } from '@weir/guest-sdk';
import { compositeController } from '@weir/guest-sdk/metacontroller';
import { finalize, sync } from './hooks.js';

export default compositeController({
  name: 'web-app',
  parent: new Kind('example.weir.dev', 'v1alpha1', 'WebApp', 'webapps'),
  children: [DEPLOYMENT],
  sync,
  finalize,
});
