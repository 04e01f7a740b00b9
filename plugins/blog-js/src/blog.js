// The Blog reconciler in JavaScript: a ConfigMap with the page, a Deployment serving it, and a Service.
//
// A port of the Rust Blog plugin (plugins/blog); plugins/blog/README.md
// specifies every field and plugins/blog/fixtures pins them, so both answer
// the same JSON for the same Blog. The children depend on the spec alone, so
// a child edited by hand is put back at the next reconcile; only the status
// reads an observed child (the Deployment's `readyReplicas`).

import {
  CONFIG_MAP,
  Cleanup,
  DEPLOYMENT,
  Kind,
  Outcome,
  PermanentError,
  Reconciler,
  SERVICE,
  condition,
  configMap,
  container,
  deployment,
  log,
  service,
  sha256Hex,
} from '@weir/guest-sdk';

export const BLOG = new Kind('weir.dev', 'v1alpha1', 'Blog', 'blogs');
export const FINALIZER = 'weir.dev/blog-cleanup';
export const DEFAULT_IMAGE = 'nginx:1.27';
const PAGE_KEY = 'index.html';
const PAGE_HASH_ANNOTATION = 'weir.dev/page-hash';
const DOCUMENT_ROOT = '/usr/share/nginx/html';
// A Service is named after the Blog, and Service names are DNS-1035 labels.
const DNS1035_LABEL = /^[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?$/;

/** @typedef {{ title: string, replicas: number, image: string }} BlogSpec */

/**
 * Decode `spec` with the Rust type's rules: `title` required, the rest defaulted, types strict.
 * @param {import('@weir/guest-sdk').Resource} blog
 * @returns {BlogSpec}
 */
export function blogSpec(blog) {
  const where = `Blog ${blog.namespace ?? ''}/${blog.name ?? ''} is invalid`;
  const spec = blog.spec;
  if (spec === undefined || spec === null) throw new PermanentError(`${where}: missing field \`spec\``);
  if (typeof spec !== 'object' || Array.isArray(spec)) throw new PermanentError(`${where}: spec: expected an object`);
  if (!('title' in spec)) throw new PermanentError(`${where}: spec: missing field \`title\``);
  const { title, replicas = 1, image = DEFAULT_IMAGE } = spec;
  if (typeof title !== 'string') throw new PermanentError(`${where}: spec.title: expected a string, got ${JSON.stringify(title)}`);
  if (!Number.isInteger(replicas) || replicas < -(2 ** 31) || replicas > 2 ** 31 - 1) {
    throw new PermanentError(`${where}: spec.replicas: expected a 32-bit integer, got ${JSON.stringify(replicas)}`);
  }
  if (typeof image !== 'string') throw new PermanentError(`${where}: spec.image: expected a string, got ${JSON.stringify(image)}`);
  return { title, replicas, image };
}

/** @type {Record<string, string>} Python's `html.escape(s, quote=True)`. */
const ESCAPES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#x27;' };

/**
 * The page: a fixed template with the title HTML-escaped.
 * @param {string} title
 */
export function page(title) {
  const t = title.replace(/[&<>"']/g, (c) => ESCAPES[c]);
  return `<!DOCTYPE html>\n<html>\n<head><meta charset="utf-8"><title>${t}</title></head>\n<body><h1>${t}</h1></body>\n</html>\n`;
}

/**
 * On the pod template, so a title change rolls the pods onto the new page.
 * @param {string} text
 */
export const pageHash = (text) => sha256Hex(text).slice(0, 16);

export default class Blog extends Reconciler {
  name = 'blog';
  version = '0.1.0';
  parent = BLOG;
  children = [CONFIG_MAP, DEPLOYMENT, SERVICE];
  finalizer = FINALIZER;

  /**
   * @param {import('@weir/guest-sdk').Resource} blog
   * @param {import('@weir/guest-sdk').Children} observed
   */
  reconcile(blog, observed) {
    const spec = blogSpec(blog);
    const name = validate(blog.name ?? '', spec);
    const text = page(spec.title);
    // Done even while pods start: readiness only changes through the
    // Deployment's status, which the host watches, so polling adds nothing.
    return Outcome.apply([pageConfigMap(name, text), webDeployment(name, spec, pageHash(text)), webService(name)]).status(
      blogStatus(blog, spec, observed.get(DEPLOYMENT, name)),
    );
  }

  /**
   * Nothing outside the cluster: the children go with the Blog through their
   * owner references. The finalizer makes the host's path run.
   * @param {import('@weir/guest-sdk').Resource} blog
   * @param {import('@weir/guest-sdk').Children} observed
   */
  finalize(blog, observed) {
    blogSpec(blog);
    log.info(`Blog ${blog.name} deleted; its ${observed.length} children are garbage-collected by their owner references`);
    return Cleanup.complete();
  }
}

/**
 * Rejects what the CRD would, for parents that bypassed it, naming the field.
 * @param {string} name
 * @param {BlogSpec} spec
 */
function validate(name, spec) {
  if (!DNS1035_LABEL.test(name)) {
    throw new PermanentError(
      `metadata.name ${JSON.stringify(name)} cannot name a Service: use at most 63 lowercase letters, digits and '-', ` +
        'starting with a letter and ending with a letter or digit',
    );
  }
  if (!spec.title) throw new PermanentError(`Blog ${name}: spec.title must not be empty`);
  if (spec.replicas < 0) throw new PermanentError(`Blog ${name}: spec.replicas must be >= 0, not ${spec.replicas}`);
  if (!spec.image) throw new PermanentError(`Blog ${name}: spec.image must not be empty`);
  return name;
}

/** What selectors match: stable for the Blog's life, as a selector must be. @param {string} name */
const selector = (name) => ({ 'app.kubernetes.io/name': 'blog', 'app.kubernetes.io/instance': name });

/** @param {string} name */
const labels = (name) => ({ ...selector(name), 'app.kubernetes.io/managed-by': 'weir' });

/** @param {string} name @param {string} text */
const pageConfigMap = (name, text) => configMap(`${name}-page`, { [PAGE_KEY]: text }, { labels: labels(name) });

/** @param {string} name @param {BlogSpec} spec @param {string} hash */
function webDeployment(name, spec, hash) {
  const web = container('web', spec.image, {
    ports: [{ name: 'http', containerPort: 80, protocol: 'TCP' }],
    volumeMounts: [{ name: 'page', mountPath: DOCUMENT_ROOT, readOnly: true }],
  });
  return deployment(name, {
    replicas: spec.replicas,
    selector: selector(name),
    labels: labels(name),
    podLabels: labels(name),
    podAnnotations: { [PAGE_HASH_ANNOTATION]: hash },
    containers: [web],
    volumes: [{ name: 'page', configMap: { name: `${name}-page` } }],
  });
}

/** @param {string} name */
function webService(name) {
  // `protocol` is a key of the ports list under server-side apply: never left to defaulting.
  const port = { name: 'http', port: 80, protocol: 'TCP', targetPort: 'http' };
  return service(name, { selector: selector(name), labels: labels(name), ports: [port] });
}

/**
 * @param {import('@weir/guest-sdk').Resource} blog
 * @param {BlogSpec} spec
 * @param {import('@weir/guest-sdk').Resource | undefined} current
 */
function blogStatus(blog, spec, current) {
  // Absent or null both mean none ready, as `Option<i32>` does in the Rust port.
  const ready = current?.path('status.readyReplicas') ?? 0;
  const holds = ready >= spec.replicas;
  return {
    ...(blog.generation != null && { observedGeneration: blog.generation }),
    readyReplicas: ready,
    conditions: [condition('Ready', holds, holds ? 'ReplicasReady' : 'ReplicasNotReady', `${ready} of ${spec.replicas} replicas ready`)],
  };
}
