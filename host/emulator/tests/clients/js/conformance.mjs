// @kubernetes/client-node against the emulator: one line per check.
//
// Usage: node conformance.mjs KUBECONFIG NODE_MODULES
//
// The kubeconfig is the one the emulator wrote, loaded unmodified; NODE_MODULES is where
// setup.sh installed the client (target/emulator-clients/js/node_modules). Each check prints
// `PASS name` or `FAIL name: reason`; the last line is `N passed, N failed`. When a check needs
// the emulator to do something no client can ask for (forget its watch history, cut every
// watch), it prints `HOOK what` and waits for one line on stdin: the driving test does it, then
// answers.

import { createRequire } from 'node:module';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';

const [kubeconfigPath, nodeModules] = process.argv.slice(2);
const require = createRequire(`${nodeModules}/`);
const k8s = await import(pathToFileURL(require.resolve('@kubernetes/client-node')).href);

const NS = 'js-conformance';
const stdin = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

/** Ask the driving test to act on the emulator, and wait until it has. */
async function hook(what) {
  process.stdout.write(`HOOK ${what}\n`);
  const { value } = await stdin.next();
  if (value?.trim() !== 'ok') throw new Error(`hook ${what} answered ${value}`);
}

function expect(cond, message) {
  if (!cond) throw new Error(typeof message === 'string' ? message : JSON.stringify(message));
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Wait until `cond()` holds, failing with `what` after 10 seconds. */
async function until(what, cond) {
  const deadline = Date.now() + 10_000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

const kc = new k8s.KubeConfig();
kc.loadFromFile(kubeconfigPath);
const core = kc.makeApiClient(k8s.CoreV1Api);
const objects = k8s.KubernetesObjectApi.makeApiClient(kc);

const cm = (name, data = {}, labels = {}) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: NS, labels },
  data,
});

/** An informer on the namespace's ConfigMaps that records what its handlers were told. */
function configMapInformer() {
  const informer = k8s.makeInformer(kc, `/api/v1/namespaces/${NS}/configmaps`, () =>
    core.listNamespacedConfigMap({ namespace: NS }),
  );
  const log = { events: [], connects: 0, errors: [] };
  informer.on('add', (o) => log.events.push(`add ${o.metadata.name}`));
  informer.on('update', (o) => log.events.push(`update ${o.metadata.name}`));
  informer.on('delete', (o) => log.events.push(`delete ${o.metadata.name}`));
  informer.on('connect', () => (log.connects += 1));
  informer.on('error', (e) => log.errors.push(e));
  return { informer, log };
}

const names = (informer) =>
  informer
    .list(NS)
    .map((o) => o.metadata.name)
    .sort();

const checks = {
  async kubeconfig_loads_and_namespace_is_created() {
    expect(kc.getCurrentCluster()?.skipTLSVerify === true, 'cluster does not skip TLS verify');
    const ns = await core.createNamespace({ body: { metadata: { name: NS } } });
    expect(ns.metadata.name === NS, ns.metadata);
    const list = await core.listNamespace();
    expect(list.items.some((n) => n.metadata.name === 'default'), 'no default namespace');
  },

  async configmap_crud_with_typed_api() {
    const created = await core.createNamespacedConfigMap({ namespace: NS, body: cm('crud', { a: '1' }) });
    expect(created.metadata.uid, 'no uid');
    const read = await core.readNamespacedConfigMap({ name: 'crud', namespace: NS });
    read.data.b = '2';
    const replaced = await core.replaceNamespacedConfigMap({ name: 'crud', namespace: NS, body: read });
    expect(replaced.data.b === '2', replaced.data);
    const listed = await core.listNamespacedConfigMap({ namespace: NS, labelSelector: 'missing' });
    expect(listed.items.length === 0, 'a selector matching nothing listed objects');
    await core.deleteNamespacedConfigMap({ name: 'crud', namespace: NS });
    let status;
    try {
      await core.readNamespacedConfigMap({ name: 'crud', namespace: NS });
    } catch (e) {
      status = e.code;
    }
    expect(status === 404, `read after delete: ${status}`);
  },

  async informer_lists_then_follows_changes() {
    await core.createNamespacedConfigMap({ namespace: NS, body: cm('seen-0') });
    const { informer, log } = configMapInformer();
    await informer.start();
    await until('the initial list', () => names(informer).includes('seen-0'));
    await core.createNamespacedConfigMap({ namespace: NS, body: cm('seen-1') });
    await core.patchNamespacedConfigMap(
      { name: 'seen-0', namespace: NS, body: { data: { x: 'y' } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    await core.deleteNamespacedConfigMap({ name: 'seen-1', namespace: NS });
    await until('add, update, delete', () => log.events.includes('delete seen-1'));
    await informer.stop();
    expect(
      JSON.stringify(log.events) ===
        JSON.stringify(['add seen-0', 'add seen-1', 'update seen-0', 'delete seen-1']),
      log.events,
    );
    expect(informer.get('seen-0', NS)?.data?.x === 'y', 'cache holds the old object');
  },

  async informer_rewatches_when_the_server_closes_the_watch() {
    const { informer, log } = configMapInformer();
    await informer.start();
    await until('the initial list', () => names(informer).includes('seen-0'));
    const connects = log.connects;
    await hook('drop-watches');
    await core.createNamespacedConfigMap({ namespace: NS, body: cm('after-drop') });
    await until('the object created after the cut', () => names(informer).includes('after-drop'));
    // client-node reports its own abort on stop() as an error: count the errors before it.
    const errors = [...log.errors];
    await informer.stop();
    expect(log.connects > connects, `no reconnect (connects ${log.connects})`);
    expect(errors.length === 0, `errors: ${errors}`);
    expect(log.events.filter((e) => e === 'add after-drop').length === 1, log.events);
  },

  async informer_restarted_after_a_connection_cut_mid_stream_catches_up() {
    // A cut connection is an error for client-node; its docs restart the informer from the
    // error handler, and the restart resumes from the last resourceVersion it saw.
    const { informer, log } = configMapInformer();
    let stopping = false;
    informer.on('error', () => stopping || setTimeout(() => stopping || informer.start(), 50));
    await informer.start();
    await until('the initial list', () => names(informer).includes('after-drop'));
    await hook('fault {"verbs": ["watch"], "resource": "configmaps", "times": 1, "fault": {"kind": "closeWatch", "afterMillis": 100}}');
    // The fault applies to the next watch: cut the current one so the informer opens it.
    await hook('drop-watches');
    await until('the cut', () => log.errors.length > 0);
    await hook('clear-faults');
    await core.createNamespacedConfigMap({ namespace: NS, body: cm('after-cut') });
    await until('the object created after the cut', () => names(informer).includes('after-cut'));
    stopping = true;
    await informer.stop();
    expect(log.events.filter((e) => e.startsWith('add')).length === names(informer).length, log.events);
  },

  async informer_relists_after_a_410_and_reports_what_it_missed() {
    const { informer, log } = configMapInformer();
    await informer.start();
    await until('the initial list', () => names(informer).includes('after-cut'));
    const before = informer.latestResourceVersion();
    // Stop watching, change things while nobody watches, forget the history, then come back:
    // the watch from the old version answers 410 and the informer must re-list.
    await informer.stop();
    await core.deleteNamespacedConfigMap({ name: 'seen-0', namespace: NS });
    await core.createNamespacedConfigMap({ namespace: NS, body: cm('while-away') });
    await hook('compact');
    const seen = log.events.length;
    await informer.start();
    await until('the re-list', () => names(informer).includes('while-away'));
    await informer.stop();
    expect(informer.latestResourceVersion() !== before, 'resourceVersion not renewed');
    const missed = log.events.slice(seen).sort();
    expect(JSON.stringify(missed) === JSON.stringify(['add while-away', 'delete seen-0']), missed);
    expect(!names(informer).includes('seen-0'), 'the deleted object stayed in the cache');
  },

  async informer_survives_an_injected_410_in_the_watch_stream() {
    const { informer, log } = configMapInformer();
    await informer.start();
    await until('the initial list', () => names(informer).includes('while-away'));
    const lists = log.connects;
    await hook('fault {"verbs": ["watch"], "resource": "configmaps", "times": 1, "fault": {"kind": "expired"}}');
    await hook('drop-watches');
    await until('a reconnect', () => log.connects >= lists + 2);
    await core.createNamespacedConfigMap({ namespace: NS, body: cm('after-410') });
    await until('the object created after the 410', () => names(informer).includes('after-410'));
    const errors = [...log.errors];
    await informer.stop();
    expect(errors.length === 0, `errors: ${errors}`);
    await hook('clear-faults');
  },

  async kubernetes_object_api_server_side_apply() {
    const spec = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: NS, labels: { app: 'web' } },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: 'web' } },
        template: {
          metadata: { labels: { app: 'web' } },
          spec: { containers: [{ name: 'web', image: 'nginx:1.27' }] },
        },
      },
    };
    const applied = await objects.patch(spec, undefined, undefined, 'js-apply', undefined,
      k8s.PatchStrategy.ServerSideApply);
    expect(applied.spec.replicas === 2, applied.spec);
    expect(applied.spec.strategy?.type === 'RollingUpdate', 'server defaults missing');
    const managers = applied.metadata.managedFields.map((m) => `${m.manager}/${m.operation}`);
    expect(managers.includes('js-apply/Apply'), managers);
    spec.spec.replicas = 3;
    const again = await objects.patch(spec, undefined, undefined, 'js-apply', undefined,
      k8s.PatchStrategy.ServerSideApply);
    expect(again.spec.replicas === 3 && again.metadata.generation === 2, again.metadata);
    let conflict;
    try {
      await objects.patch({ ...spec, spec: { ...spec.spec, replicas: 5 } }, undefined, undefined,
        'someone-else', undefined, k8s.PatchStrategy.ServerSideApply);
    } catch (e) {
      conflict = e.code;
    }
    expect(conflict === 409, `conflicting apply answered ${conflict}`);
    const forced = await objects.patch({ ...spec, spec: { ...spec.spec, replicas: 5 } }, undefined,
      undefined, 'someone-else', true, k8s.PatchStrategy.ServerSideApply);
    expect(forced.spec.replicas === 5, forced.spec);
    const read = await objects.read({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace: NS } });
    expect(read.spec.template.spec.containers[0].image === 'nginx:1.27', read.spec);
    const listed = await objects.list('apps/v1', 'Deployment', NS);
    expect(listed.items.map((d) => d.metadata.name).join() === 'web', listed.items);
    await objects.delete(read);
  },

  async kubernetes_object_api_create_replace_delete_a_secret() {
    const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'db', namespace: NS },
      stringData: { password: 's3cr3t' } };
    const created = await objects.create(secret);
    expect(created.type === 'Opaque', `type ${created.type}`);
    expect(Buffer.from(created.data.password, 'base64').toString() === 's3cr3t', created.data);
    created.data.user = Buffer.from('admin').toString('base64');
    const replaced = await objects.replace(created);
    expect(Object.keys(replaced.data).sort().join() === 'password,user', replaced.data);
    await objects.delete(replaced);
  },

  async namespace_deletion_removes_its_contents() {
    await core.deleteNamespace({ name: NS });
    const deadline = Date.now() + 10_000;
    for (;;) {
      try {
        await core.readNamespace({ name: NS });
      } catch (e) {
        expect(e.code === 404, `read namespace: ${e.code}`);
        break;
      }
      if (Date.now() > deadline) throw new Error('namespace never went away');
      await sleep(50);
    }
    const left = await core.listConfigMapForAllNamespaces({ fieldSelector: `metadata.namespace=${NS}` });
    expect(left.items.length === 0, 'contents survived');
  },
};

let passed = 0;
let failed = 0;
for (const [name, check] of Object.entries(checks)) {
  try {
    await check();
    passed += 1;
    console.log(`PASS ${name}`);
  } catch (e) {
    failed += 1;
    const detail = String(e?.stack ?? e).replace(/\s+/g, ' ').slice(0, 600);
    console.log(`FAIL ${name}: ${detail}`);
  }
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
