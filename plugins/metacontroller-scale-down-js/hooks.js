// WebApp's CompositeController hooks as `async` webhook functions, the way Metacontroller's
// Node.js hooks are written (no Weir import).
//
// A WebApp runs `spec.image` as a Deployment of `spec.replicas` Pods (default 1). Deleting it
// scales the Deployment to zero first: the finalize hook keeps returning the Deployment with
// `replicas: 0` and `finalized: false` until the observed Deployment shows no replicas left,
// and only then lets the WebApp go (the usual "scale my pods to zero, then let me go").

const DEPLOYMENTS = 'Deployment.apps/v1';

/**
 * The Deployment of `parent` at `replicas`.
 * @param {Record<string, any>} parent
 * @param {number} replicas
 */
function deployment(parent, replicas) {
  const name = parent.metadata.name;
  const labels = { app: name };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, labels },
    spec: {
      replicas,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: { containers: [{ name: 'web', image: parent.spec?.image ?? 'nginx:1.27' }] },
      },
    },
  };
}

/**
 * The Deployment at the wanted size, and how many of its replicas are ready.
 * @param {{ parent: Record<string, any>, children: Record<string, Record<string, any>> }} request
 */
export async function sync(request) {
  const { parent } = request;
  const observed = request.children[DEPLOYMENTS]?.[parent.metadata.name];
  return {
    status: { phase: 'Running', readyReplicas: observed?.status?.readyReplicas ?? 0 },
    children: [deployment(parent, parent.spec?.replicas ?? 1)],
  };
}

/**
 * While the WebApp is deleted: the Deployment at zero replicas, finalized once none is left.
 * @param {{ parent: Record<string, any>, children: Record<string, Record<string, any>> }} request
 */
export async function finalize(request) {
  const { parent } = request;
  const observed = request.children[DEPLOYMENTS]?.[parent.metadata.name];
  const left = observed === undefined ? 0 : Math.max(observed.spec?.replicas ?? 1, observed.status?.replicas ?? 0);
  return {
    status: { phase: left === 0 ? 'Stopped' : 'ScalingDown', replicasLeft: left },
    children: [deployment(parent, 0)],
    finalized: left === 0,
  };
}
