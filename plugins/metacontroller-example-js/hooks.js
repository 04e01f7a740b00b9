// ConfigBundle's CompositeController hooks as `async` webhook functions, the way Metacontroller's
// Node.js hooks are written (no Weir import).
//
// The same controller as ../metacontroller-example/hooks.py: a ConfigBundle gathers the
// ConfigMaps named in `spec.sources` (in that order) and those its `spec.selector` selects (by
// name) into one ConfigMap, `<name>-bundle`, whose key `cm.k` is key `k` of source `cm`. The
// status counts the sources found and lists the named ones missing.

/** The bundle looks again this often while a named source is missing. */
export const MISSING_RESYNC_SECONDS = 30;

/**
 * The related resources: the named sources, and the ConfigMaps the selector selects.
 * @param {{ parent: Record<string, any> }} request
 */
export async function customize(request) {
  const spec = request.parent.spec ?? {};
  const rules = [];
  if (spec.sources?.length) rules.push({ apiVersion: 'v1', resource: 'configmaps', names: [...spec.sources] });
  if (spec.selector !== undefined && spec.selector !== null) rules.push({ apiVersion: 'v1', resource: 'configmaps', labelSelector: spec.selector });
  return { relatedResources: rules };
}

/**
 * The sources in bundle order, named first, then the selected ones by name; never the bundle itself.
 * @param {Record<string, any>} related the ConfigMaps by name
 * @param {string[]} named
 * @param {string} bundleName
 */
async function sourcesInOrder(related, named, bundleName) {
  const selected = Object.keys(related).filter((n) => !named.includes(n)).sort();
  return [...named.filter((n) => n in related), ...selected].filter((n) => n !== bundleName);
}

/**
 * The bundle ConfigMap, the status, and a resync while a named source is missing.
 * @param {{ parent: Record<string, any>, related: Record<string, Record<string, any>> }} request
 */
export async function sync(request) {
  const { parent } = request;
  const name = parent.metadata.name;
  const bundleName = `${name}-bundle`;
  const named = [...(parent.spec?.sources ?? [])];
  const related = request.related['ConfigMap.v1'] ?? {};
  const sources = await sourcesInOrder(related, named, bundleName);
  /** @type {Record<string, string>} */
  const data = {};
  for (const source of sources) {
    for (const key of Object.keys(related[source].data ?? {}).sort()) data[`${source}.${key}`] = related[source].data[key];
  }
  const missing = named.filter((n) => !(n in related));
  return {
    status: { sources: sources.length, missing },
    children: [
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: bundleName, labels: { 'config-bundle.example.weir.dev/bundle': name } },
        data,
      },
    ],
    resyncAfterSeconds: missing.length ? MISSING_RESYNC_SECONDS : 0,
  };
}
