// Kubernetes objects as plain JSON objects: the parent with accessors, and builders for common children.
//
// Objects cross the plugin boundary as JSON, so a plain object is the honest
// JavaScript type for them. `KubeObject` adds read accessors (on the
// prototype, so they never appear in JSON); the builders return plain
// objects a plugin can extend freely.

/**
 * A Kubernetes resource type as a plugin declares it (WIT `resource-kind`).
 */
export class Kind {
  /**
   * @param {string} group API group; empty for the core group.
   * @param {string} version API version within the group, e.g. `v1`.
   * @param {string} kind Kind, e.g. `Deployment`.
   * @param {string} plural Plural used in URLs, e.g. `deployments`.
   * @param {boolean} [namespaced=true] Whether objects of this kind live in a namespace.
   */
  constructor(group, version, kind, plural, namespaced = true) {
    this.group = group;
    this.version = version;
    this.kind = kind;
    this.plural = plural;
    this.namespaced = namespaced;
    Object.freeze(this);
  }

  /** `group/version`, or just `version` for the core group, as in `apiVersion`. */
  get apiVersion() {
    return this.group ? `${this.group}/${this.version}` : this.version;
  }

  /**
   * Whether `obj` (a manifest) is of this kind.
   * @param {Record<string, any>} obj
   */
  matches(obj) {
    return obj?.apiVersion === this.apiVersion && obj?.kind === this.kind;
  }
}

/** The child kinds most plugins own. */
export const CONFIG_MAP = new Kind('', 'v1', 'ConfigMap', 'configmaps');
export const SERVICE = new Kind('', 'v1', 'Service', 'services');
export const DEPLOYMENT = new Kind('apps', 'v1', 'Deployment', 'deployments');
/** Kinds often read as related objects (`Reconciler.related`): a Secret arrives without its data. */
export const SECRET = new Kind('', 'v1', 'Secret', 'secrets');
export const NAMESPACE = new Kind('', 'v1', 'Namespace', 'namespaces', false);

/**
 * A Kubernetes object with accessors for the usual fields. Accessors never
 * throw on a missing field (a cached object may lack `status` or labels).
 */
export class KubeObject {
  /** @param {Record<string, any>} obj the decoded JSON object */
  constructor(obj) {
    // Own data properties, so a field named like an accessor shadows it
    // instead of throwing on assignment.
    for (const [key, value] of Object.entries(obj)) {
      Object.defineProperty(this, key, { value, enumerable: true, writable: true, configurable: true });
    }
  }

  /** @returns {Record<string, any>} */
  get meta() {
    return /** @type {Resource} */ (this).metadata ?? {};
  }

  /** @returns {string | undefined} */
  get name() {
    return this.meta.name;
  }

  /** @returns {string | undefined} */
  get namespace() {
    return this.meta.namespace;
  }

  /** @returns {string | undefined} */
  get uid() {
    return this.meta.uid;
  }

  /** @returns {number | undefined} */
  get generation() {
    return this.meta.generation;
  }

  /** @returns {Record<string, string>} */
  get labels() {
    return this.meta.labels ?? {};
  }

  /** @returns {Record<string, string>} */
  get annotations() {
    return this.meta.annotations ?? {};
  }

  /** Whether the object is being deleted (`metadata.deletionTimestamp` is set). */
  get deleting() {
    return this.meta.deletionTimestamp != null;
  }

  /**
   * The value at a dotted path such as `"status.readyReplicas"`, or `fallback`.
   * @param {string} dotted
   * @param {any} [fallback]
   */
  path(dotted, fallback = undefined) {
    /** @type {any} */
    let node = this;
    for (const part of dotted.split('.')) {
      if (node === null || typeof node !== 'object' || !Object.hasOwn(node, part)) return fallback;
      node = node[part];
    }
    return node;
  }
}

/**
 * A `KubeObject` with its JSON fields (`spec`, `status`, ...) typed loosely:
 * what `reconcile` receives and `Children` holds.
 * @typedef {KubeObject & {[field: string]: any}} Resource
 */

/**
 * Where an object lives (contract 0.4.0): the key of a cluster name kept beside an object's
 * fields, not among them (JSON.stringify leaves it out). Read it with `clusterOf`.
 */
export const CLUSTER = Symbol('weir.cluster');

/**
 * The name of the cluster `obj` lives in (an observed object) or belongs in (a desired child
 * built with `inCluster`); `undefined`: the parent's.
 * @param {object | undefined} obj
 * @returns {string | undefined}
 */
export function clusterOf(obj) {
  return /** @type {any} */ (obj)?.[CLUSTER];
}

/**
 * `manifest` (copied) as a desired child that belongs in `cluster` (contract 0.4.0), not the
 * parent's. The host refuses a cluster it has not engaged.
 * @template {object} T
 * @param {string | undefined} cluster
 * @param {T} manifest
 * @returns {T}
 */
export function inCluster(cluster, manifest) {
  return placedAt(cluster, { ...manifest });
}

/**
 * `obj` itself, marked as living in `cluster` (unless it is `undefined`).
 * @template {object} T
 * @param {string | undefined} cluster
 * @param {T} obj
 * @returns {T}
 */
function placedAt(cluster, obj) {
  if (cluster !== undefined) Object.defineProperty(obj, CLUSTER, { value: cluster, enumerable: false });
  return obj;
}

/**
 * A set of objects looked up by kind and name (the observed children, or the related objects).
 * Each lives in a cluster (`clusterOf`, contract 0.4.0): `ofKind` and `get` read the parent's
 * (`cluster`), and `inCluster(name)` reads another.
 */
export class Objects {
  /**
   * @param {Iterable<Record<string, any>>} [objects]
   * @param {string} [cluster] the name of the parent's cluster
   */
  constructor(objects = [], cluster = undefined) {
    /** @type {Resource[]} */
    this.objects = [...objects].map((o) => (o instanceof KubeObject ? o : placedAt(clusterOf(o), new KubeObject(o))));
    /** The name of the parent's cluster (`undefined` in a test that names none). */
    this.cluster = cluster;
    /** @type {string | undefined} the cluster `ofKind` and `get` read */
    this.reading = cluster;
  }

  /**
   * The same objects, `ofKind` and `get` reading those in `cluster`.
   * @param {string} cluster
   * @returns {Objects}
   */
  inCluster(cluster) {
    const view = Object.create(Objects.prototype);
    Object.assign(view, this, { reading: cluster });
    return view;
  }

  /** The names of the clusters the objects live in, sorted, each once. */
  clusters() {
    const names = new Set(this.objects.map((o) => clusterOf(o) ?? this.cluster).filter((c) => c !== undefined));
    return [...names].sort();
  }

  [Symbol.iterator]() {
    return this.objects[Symbol.iterator]();
  }

  get length() {
    return this.objects.length;
  }

  /**
   * Every object of `kind`.
   * @param {Kind} kind
   */
  ofKind(kind) {
    return this.objects.filter((o) => kind.matches(o) && (clusterOf(o) ?? this.cluster) === this.reading);
  }

  /**
   * The object of `kind` named `name` (in `namespace`, if given), if the cache holds one.
   * @param {Kind} kind
   * @param {string} name
   * @param {string} [namespace]
   * @returns {Resource | undefined}
   */
  get(kind, name, namespace = undefined) {
    return this.ofKind(kind).find((o) => o.name === name && (namespace === undefined || o.namespace === namespace));
  }
}

/**
 * The observed children of one parent, looked up by kind and name. `related`
 * holds the related objects the plugin selected that exist (`select`; empty
 * for a plugin without related kinds), looked up the same way. Secrets come
 * without their data.
 */
export class Children extends Objects {
  /**
   * @param {Iterable<Record<string, any>>} [objects]
   * @param {Iterable<Record<string, any>>} [related]
   * @param {string} [cluster] the name of the parent's cluster (contract 0.4.0)
   */
  constructor(objects = [], related = [], cluster = undefined) {
    super(objects, cluster);
    this.related = new Objects(related, cluster);
  }
}

/**
 * @typedef {object} MetaOptions
 * @property {Record<string, string>} [labels]
 * @property {Record<string, string>} [annotations]
 */

/** @param {string} name @param {MetaOptions} opts */
function metadata(name, { labels, annotations } = {}) {
  /** @type {Record<string, any>} */
  const meta = { name };
  if (labels && Object.keys(labels).length) meta.labels = { ...labels };
  if (annotations && Object.keys(annotations).length) meta.annotations = { ...annotations };
  return meta;
}

/**
 * A `v1/ConfigMap` manifest holding `data`.
 * @param {string} name
 * @param {Record<string, string>} data
 * @param {MetaOptions} [opts]
 */
export function configMap(name, data, opts = {}) {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: metadata(name, opts), data: { ...data } };
}

/**
 * A container spec; `ports` and `volumeMounts` are omitted when empty.
 * @param {string} name
 * @param {string} image
 * @param {{ports?: object[], volumeMounts?: object[], [field: string]: any}} [opts]
 */
export function container(name, image, { ports = [], volumeMounts = [], ...extra } = {}) {
  /** @type {Record<string, any>} */
  const spec = { name, image };
  if (ports.length) spec.ports = ports.map((p) => ({ ...p }));
  if (volumeMounts.length) spec.volumeMounts = volumeMounts.map((m) => ({ ...m }));
  return Object.assign(spec, extra);
}

/**
 * @typedef {MetaOptions & {
 *   replicas: number,
 *   selector: Record<string, string>,
 *   containers: object[],
 *   volumes?: object[],
 *   podLabels?: Record<string, string>,
 *   podAnnotations?: Record<string, string>,
 * }} DeploymentOptions
 */

/**
 * An `apps/v1` Deployment whose pods carry `selector` (plus `podLabels`).
 * @param {string} name
 * @param {DeploymentOptions} opts
 */
export function deployment(name, opts) {
  const { replicas, selector, containers, volumes = [], podLabels = {}, podAnnotations = {} } = opts;
  /** @type {Record<string, any>} */
  const templateMeta = { labels: { ...selector, ...podLabels } };
  if (Object.keys(podAnnotations).length) templateMeta.annotations = { ...podAnnotations };
  /** @type {Record<string, any>} */
  const podSpec = { containers: containers.map((c) => ({ ...c })) };
  if (volumes.length) podSpec.volumes = volumes.map((v) => ({ ...v }));
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: metadata(name, opts),
    spec: {
      replicas,
      selector: { matchLabels: { ...selector } },
      template: { metadata: templateMeta, spec: podSpec },
    },
  };
}

/**
 * A `v1/Service` routing `ports` to the pods matching `selector`.
 * @param {string} name
 * @param {MetaOptions & {selector: Record<string, string>, ports: object[], type?: string}} opts
 */
export function service(name, opts) {
  const { selector, ports, type } = opts;
  /** @type {Record<string, any>} */
  const spec = { selector: { ...selector }, ports: ports.map((p) => ({ ...p })) };
  if (type) spec.type = type;
  return { apiVersion: 'v1', kind: 'Service', metadata: metadata(name, opts), spec };
}

/**
 * A `status.conditions` entry, `True` when `holds`, else `False`. A plugin has
 * no clock: the host sets `lastTransitionTime` and `observedGeneration` (as
 * the Rust SDK's `Condition::new` does).
 * @param {string} type
 * @param {boolean} holds
 * @param {string} reason
 * @param {string} message
 */
export function condition(type, holds, reason, message) {
  return { type, status: holds ? 'True' : 'False', reason, message };
}
