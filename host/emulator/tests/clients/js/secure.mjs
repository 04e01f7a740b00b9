// @kubernetes/client-node against a secure emulator: TLS and bearer tokens from kubeconfigs.
//
// Usage: node secure.mjs ADMIN_KUBECONFIG WRONG_TOKEN_KUBECONFIG SERVICE_ACCOUNT_KUBECONFIG NODE_MODULES
//
// The first is the one the emulator wrote (its CA as certificate-authority-data, the admin
// token); the others differ only in the token: a wrong one, and one the TokenRequest API issued
// for a ServiceAccount that may read ConfigMaps in `default` only. Prints `PASS name` or
// `FAIL name: reason` per check.

import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const [admin, wrong, serviceAccount, nodeModules] = process.argv.slice(2);
const require = createRequire(`${nodeModules}/`);
const k8s = await import(pathToFileURL(require.resolve('@kubernetes/client-node')).href);

function core(path) {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(path);
  return kc.makeApiClient(k8s.CoreV1Api);
}

async function failure(call) {
  try {
    await call();
  } catch (e) {
    return e;
  }
  return null;
}

function expect(cond, message) {
  if (!cond) throw new Error(message);
}

const checks = {
  async tls_with_the_admin_token_lists_namespaces() {
    const list = await core(admin).listNamespace();
    const names = list.items.map((n) => n.metadata.name);
    expect(names.includes('default'), JSON.stringify(names));
  },
  async a_wrong_token_gets_401() {
    const e = await failure(() => core(wrong).listNamespace());
    expect(e?.code === 401, `${e}`);
  },
  async a_service_account_reads_what_its_role_grants_and_gets_403_elsewhere() {
    const api = core(serviceAccount);
    await api.listNamespacedConfigMap({ namespace: 'default' });
    const e = await failure(() => api.listNamespacedConfigMap({ namespace: 'kube-system' }));
    expect(e?.code === 403, `${e}`);
    const want = 'configmaps is forbidden: User \\"system:serviceaccount:default:reader\\" cannot list '
      + 'resource \\"configmaps\\" in API group \\"\\" in the namespace \\"kube-system\\"';
    const body = typeof e.body === 'string' ? e.body : JSON.stringify(e.body);
    expect(body.includes(want) || body.includes(want.replaceAll('\\"', '"')), body);
  },
};

let failed = 0;
for (const [name, check] of Object.entries(checks)) {
  try {
    await check();
    console.log(`PASS ${name}`);
  } catch (e) {
    failed += 1;
    console.log(`FAIL ${name}: ${e?.message ?? e}`);
  }
}
process.exit(failed ? 1 : 0);
