// The Blog reconciler in JavaScript: a ConfigMap with the page, a Deployment serving it, and a Service.
//
// A port of the Rust Blog plugin (plugins/blog); plugins/blog/README.md
// specifies every field and plugins/blog/fixtures pins them, so both answer
// the same JSON for the same Blog. The children depend on the spec and the
// related ConfigMaps the Blog selected (its theme by name, its posts by label
// selector), never on what was observed, so a child edited by hand is put back
// at the next reconcile; only the status reads an observed child (the
// Deployment's `readyReplicas`).

import {
  CONFIG_MAP,
  Cleanup,
  DEPLOYMENT,
  Kind,
  LabelSelector,
  Outcome,
  PermanentError,
  Reconciler,
  SERVICE,
  Selection,
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
// The theme's key holding the CSS; a post's keys holding its title (required) and body.
const STYLE_KEY = 'style.css';
const POST_TITLE_KEY = 'title';
const POST_BODY_KEY = 'body';
const OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist'];

/**
 * @typedef {{ matchLabels: Record<string, string>, matchExpressions: {key: string, operator: string, values: string[]}[] }} PostsSelector
 * @typedef {{ title: string, replicas: number, image: string, theme?: string, postsSelector?: PostsSelector }} BlogSpec
 * @typedef {{ title: string, body: string }} Post
 */

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
  const theme = spec.theme ?? undefined;
  if (theme !== undefined && typeof theme !== 'string') throw new PermanentError(`${where}: spec.theme: expected a string, got ${JSON.stringify(theme)}`);
  const posts = spec.postsSelector ?? undefined;
  return {
    title,
    replicas,
    image,
    ...(theme !== undefined && { theme }),
    ...(posts !== undefined && { postsSelector: postsSelector(posts, `${where}: spec.postsSelector`) }),
  };
}

/** @param {unknown} v */
const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * `spec.postsSelector` decoded strictly, as serde decodes the Rust `PostsSelector`.
 * @param {unknown} value
 * @param {string} where
 * @returns {PostsSelector}
 */
export function postsSelector(value, where) {
  if (!isObject(value)) throw new PermanentError(`${where}: expected an object, got ${JSON.stringify(value)}`);
  const v = /** @type {Record<string, any>} */ (value);
  const labels = v.matchLabels ?? {};
  if (!isObject(labels) || !Object.values(labels).every((x) => typeof x === 'string')) {
    throw new PermanentError(`${where}.matchLabels: expected a map of strings, got ${JSON.stringify(labels)}`);
  }
  const expressions = v.matchExpressions ?? [];
  if (!Array.isArray(expressions)) throw new PermanentError(`${where}.matchExpressions: expected a list, got ${JSON.stringify(expressions)}`);
  const requirements = expressions.map((e, i) => {
    const at = `${where}.matchExpressions[${i}]`;
    if (!isObject(e)) throw new PermanentError(`${at}: expected an object, got ${JSON.stringify(e)}`);
    for (const field of ['key', 'operator']) if (!(field in e)) throw new PermanentError(`${at}: missing field \`${field}\``);
    if (typeof e.key !== 'string') throw new PermanentError(`${at}.key: expected a string, got ${JSON.stringify(e.key)}`);
    if (!OPERATORS.includes(e.operator)) {
      throw new PermanentError(`${at}.operator: unknown variant ${JSON.stringify(e.operator)}, expected one of ${OPERATORS.join(', ')}`);
    }
    const values = e.values ?? [];
    if (!Array.isArray(values) || !values.every((x) => typeof x === 'string')) {
      throw new PermanentError(`${at}.values: expected a list of strings, got ${JSON.stringify(values)}`);
    }
    return { key: e.key, operator: e.operator, values: [...values] };
  });
  return { matchLabels: { ...labels }, matchExpressions: requirements };
}

/**
 * The theme by name, then the posts by selector (README, *select*).
 * @param {BlogSpec} spec
 */
export function selections(spec) {
  const selected = [];
  if (spec.theme !== undefined) selected.push(Selection.byName(CONFIG_MAP, spec.theme));
  if (spec.postsSelector !== undefined) selected.push(Selection.byLabels(CONFIG_MAP, spec.postsSelector));
  return selected;
}

/** Byte order of UTF-8 strings (what Rust's `String` ordering is). @param {string} a @param {string} b */
function byteOrder(a, b) {
  const x = new TextEncoder().encode(a);
  const y = new TextEncoder().encode(b);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
}

/**
 * The theme's CSS (or why it is missing) and the posts in page order, from the selected ConfigMaps.
 * @param {BlogSpec} spec
 * @param {import('@weir/guest-sdk').Objects} related
 * @returns {{ css?: string, themeMissing?: string, posts: Post[] }}
 */
export function read(spec, related) {
  /** @type {{ css?: string, themeMissing?: string, posts: Post[] }} */
  const found = { posts: [] };
  if (spec.theme !== undefined) {
    const theme = related.get(CONFIG_MAP, spec.theme);
    const style = theme?.data?.[STYLE_KEY];
    if (theme === undefined) found.themeMissing = `theme ConfigMap ${spec.theme} does not exist`;
    else if (typeof style !== 'string') found.themeMissing = `theme ConfigMap ${spec.theme} has no key ${STYLE_KEY}`;
    else found.css = style;
  }
  if (spec.postsSelector !== undefined) {
    // The theme arrives in the same list, so match again; page order is by name.
    const selector = LabelSelector.parse(spec.postsSelector);
    const candidates = related.ofKind(CONFIG_MAP).sort((a, b) => byteOrder(a.name ?? '', b.name ?? ''));
    for (const cm of candidates) {
      const data = cm.data ?? {};
      if (selector.matches(cm.labels) && typeof data[POST_TITLE_KEY] === 'string') {
        found.posts.push({ title: data[POST_TITLE_KEY], body: data[POST_BODY_KEY] ?? '' });
      }
    }
  }
  return found;
}

/** @type {Record<string, string>} Python's `html.escape(s, quote=True)`. */
const ESCAPES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#x27;' };

/** @param {string} text */
const escape = (text) => text.replace(/[&<>"']/g, (c) => ESCAPES[c]);

/**
 * The page: a fixed template with the title HTML-escaped, the theme inlined, the posts listed.
 * @param {string} title
 * @param {string} [css]
 * @param {Post[]} [posts]
 */
export function page(title, css = undefined, posts = []) {
  const t = escape(title);
  // `\3c ` is CSS's own escape of `<`: the CSS means the same and cannot close the element.
  const style = css === undefined ? '' : `<style>${css.replaceAll('<', '\\3c ')}</style>`;
  const articles = posts.length
    ? `\n${posts.map((p) => `<article><h2>${escape(p.title)}</h2><p>${escape(p.body)}</p></article>\n`).join('')}`
    : '';
  return `<!DOCTYPE html>\n<html>\n<head><meta charset="utf-8"><title>${t}</title>${style}</head>\n<body><h1>${t}</h1>${articles}</body>\n</html>\n`;
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
  // The theme and the posts are ConfigMaps the Blog reads but does not own.
  related = [CONFIG_MAP];
  finalizer = FINALIZER;

  /** @param {import('@weir/guest-sdk').Resource} blog */
  select(blog) {
    return selections(blogSpec(blog));
  }

  /**
   * @param {import('@weir/guest-sdk').Resource} blog
   * @param {import('@weir/guest-sdk').Children} observed
   */
  reconcile(blog, observed) {
    const spec = blogSpec(blog);
    const name = validate(blog.name ?? '', spec);
    const found = read(spec, observed.related);
    const text = page(spec.title, found.css, found.posts);
    // Done even while pods start: readiness only changes through the
    // Deployment's status, which the host watches, so polling adds nothing.
    return Outcome.apply([pageConfigMap(name, text), webDeployment(name, spec, pageHash(text)), webService(name)]).status(
      blogStatus(blog, spec, observed.get(DEPLOYMENT, name), found.themeMissing),
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
 * @param {string} [themeMissing] why the theme is missing; takes precedence over the replicas
 */
function blogStatus(blog, spec, current, themeMissing = undefined) {
  // Absent or null both mean none ready, as `Option<i32>` does in the Rust port.
  const ready = current?.path('status.readyReplicas') ?? 0;
  const holds = ready >= spec.replicas;
  const readiness =
    themeMissing !== undefined
      ? condition('Ready', false, 'ThemeNotFound', themeMissing)
      : condition('Ready', holds, holds ? 'ReplicasReady' : 'ReplicasNotReady', `${ready} of ${spec.replicas} replicas ready`);
  return {
    ...(blog.generation != null && { observedGeneration: blog.generation }),
    readyReplicas: ready,
    conditions: [readiness],
  };
}
