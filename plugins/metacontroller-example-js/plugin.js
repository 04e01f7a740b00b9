// ConfigBundle as a Weir plugin from async JavaScript hooks: the CompositeController declaration.
//
//   node guest-sdk/js/bin/componentize.js build plugins/metacontroller-example-js/plugin.js \
//     --crd plugins/metacontroller-example/crd.yaml -o target/plugins/metacontroller-example-js.wasm

import { CONFIG_MAP, Kind } from '@weir/guest-sdk';
import { compositeController } from '@weir/guest-sdk/metacontroller';
import { customize, sync } from './hooks.js';

export default compositeController({
  name: 'config-bundle',
  parent: new Kind('example.weir.dev', 'v1alpha1', 'ConfigBundle', 'configbundles'),
  children: [CONFIG_MAP],
  related: [CONFIG_MAP],
  sync,
  customize,
});
