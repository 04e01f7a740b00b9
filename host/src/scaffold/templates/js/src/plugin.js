// The {{Kind}} plugin: one ConfigMap per {{Kind}}, holding its message, and a Ready condition.

import { CONFIG_MAP, Kind, Outcome, PermanentError, Reconciler, condition, configMap } from '@weir/guest-sdk';

export default class {{Kind}} extends Reconciler {
  name = '{{name}}'; // the field manager is weir/{{name}}
  version = '0.1.0';
  parent = new Kind('{{group}}', 'v1alpha1', '{{Kind}}', '{{plural}}');
  children = [CONFIG_MAP]; // anything else it returns is refused

  /**
   * @param {import('@weir/guest-sdk').Resource} parent
   * @param {import('@weir/guest-sdk').Children} _children
   */
  reconcile(parent, _children) {
    const where = `{{Kind}} ${parent.namespace}/${parent.name} is invalid`;
    const spec = parent.spec ?? {};
    if (!('message' in spec)) throw new PermanentError(`${where}: spec: missing field \`message\``);
    if (typeof spec.message !== 'string') throw new PermanentError(`${where}: spec.message: expected a string`);
    // Children land in the parent's cluster; inCluster('name', manifest) would place one in
    // another cluster the host has engaged (contract 0.4.0).
    return Outcome.apply([configMap(parent.name, { message: spec.message })]).status({
      observedGeneration: parent.generation,
      conditions: [condition('Ready', true, 'ConfigMapApplied', `ConfigMap ${parent.name} holds the message`)],
    });
  }
}
