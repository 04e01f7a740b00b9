// SecretImport as a Weir plugin from async JavaScript hooks (version v2): the CompositeController
// declaration, plus the related kind the customize hook selects.
//
//   node guest-sdk/js/bin/componentize.js build plugins/metacontroller-secret-import-js/plugin.js \
//     --crd plugins/metacontroller-secret-import-js/crd.yaml -o target/plugins/metacontroller-secret-import-js.wasm

import { Kind, SECRET } from '@weir/guest-sdk';
import { compositeController } from '@weir/guest-sdk/metacontroller';
import { customize, sync } from './hooks.js';

export default compositeController({
  name: 'secret-import',
  parent: new Kind('example.weir.dev', 'v1alpha1', 'SecretImport', 'secretimports'),
  children: [SECRET],
  related: [SECRET],
  sync,
  customize,
  hookVersion: 'v2',
});
