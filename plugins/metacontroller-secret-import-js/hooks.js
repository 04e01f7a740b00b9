// SecretImport's CompositeController hooks (version v2) as `async` webhook functions, the way
// Metacontroller's Node.js hooks are written (no Weir import).
//
// A SecretImport lives in a team's namespace and copies one Secret kept in another namespace
// (`spec.from`: a namespace and a name) into its own namespace, under its own name. The
// customize hook asks for the source by name in its namespace; with hooks of version v2,
// `related` keys a namespaced object `namespace/name`, so sync finds it under that key. The
// status names the source and the keys copied, or the source that is missing.

const SECRETS = 'Secret.v1';

/**
 * The source's namespace and name, and its key in `related`.
 * @param {Record<string, any>} parent
 */
function sourceOf(parent) {
  const { namespace = '', name = '' } = parent.spec?.from ?? {};
  return { namespace, name, key: `${namespace}/${name}` };
}

/**
 * The related resources: the source Secret, by name in its own namespace.
 * @param {{ parent: Record<string, any> }} request
 */
export async function customize(request) {
  const { namespace, name } = sourceOf(request.parent);
  return { relatedResources: [{ apiVersion: 'v1', resource: 'secrets', namespace, names: [name] }] };
}

/**
 * A copy of the source beside the SecretImport, with whatever data the source showed.
 * @param {{ parent: Record<string, any>, related: Record<string, Record<string, any>> }} request
 */
export async function sync(request) {
  const { parent } = request;
  const { key } = sourceOf(parent);
  const source = request.related[SECRETS]?.[key];
  if (source === undefined) return { status: { missing: key }, children: [] };
  const data = source.data ?? {};
  return {
    status: { source: key, keys: Object.keys(data).sort() },
    children: [
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: parent.metadata.name, labels: { 'example.weir.dev/imported-from': source.metadata.namespace } },
        type: source.type ?? 'Opaque',
        data,
      },
    ],
  };
}
