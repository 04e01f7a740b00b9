"""The official Python client against a secure emulator: TLS and bearer tokens from kubeconfigs.

Usage: secure.py ADMIN_KUBECONFIG WRONG_TOKEN_KUBECONFIG SERVICE_ACCOUNT_KUBECONFIG

The first is the one the emulator wrote (its CA as certificate-authority-data, the admin token);
the others differ only in the token: a wrong one, and one the TokenRequest API issued for a
ServiceAccount that may read ConfigMaps in `default` only. Prints `PASS name` or
`FAIL name: reason` per check.
"""

import json
import sys
import traceback

from kubernetes import client, config
from kubernetes.client.rest import ApiException

admin, wrong, service_account = sys.argv[1:4]


def status_of(call):
    try:
        call()
    except ApiException as e:
        return e
    return None


def tls_with_the_admin_token_lists_namespaces():
    api = client.CoreV1Api(config.new_client_from_config(config_file=admin))
    names = [n.metadata.name for n in api.list_namespace().items]
    assert "default" in names, names


def a_wrong_token_gets_401():
    api = client.CoreV1Api(config.new_client_from_config(config_file=wrong))
    e = status_of(api.list_namespace)
    assert e is not None and e.status == 401, e


def a_service_account_reads_what_its_role_grants_and_gets_403_elsewhere():
    api = client.CoreV1Api(config.new_client_from_config(config_file=service_account))
    api.list_namespaced_config_map("default")
    e = status_of(lambda: api.list_namespaced_config_map("kube-system"))
    assert e is not None and e.status == 403, e
    want = ('configmaps is forbidden: User "system:serviceaccount:default:reader" cannot list '
            'resource "configmaps" in API group "" in the namespace "kube-system"')
    message = json.loads(e.body)["message"]
    assert message == want, message


failed = 0
for check in [
    tls_with_the_admin_token_lists_namespaces,
    a_wrong_token_gets_401,
    a_service_account_reads_what_its_role_grants_and_gets_403_elsewhere,
]:
    try:
        check()
        print(f"PASS {check.__name__}", flush=True)
    except Exception as e:  # noqa: BLE001 - every failure is reported by name
        failed += 1
        print(f"FAIL {check.__name__}: {e!r}", flush=True)
        traceback.print_exc()
sys.exit(1 if failed else 0)
