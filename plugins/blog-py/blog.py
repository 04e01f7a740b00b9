"""The Blog reconciler in Python: a ConfigMap with the page, a Deployment serving it, and a Service.

A port of the Rust Blog plugin (plugins/blog); plugins/blog/README.md
specifies every field and plugins/blog/fixtures pins them, so both answer
the same JSON for the same Blog. The children depend on the spec alone, so
a child edited by hand is put back at the next reconcile; only the status
reads an observed child (the Deployment's `readyReplicas`).
"""

from __future__ import annotations

import hashlib
import html
import json
import re
from dataclasses import dataclass
from typing import Any

from weir_reconciler import (
    CONFIG_MAP,
    DEPLOYMENT,
    SERVICE,
    Children,
    Cleanup,
    Kind,
    Object,
    Outcome,
    PermanentError,
    Reconciler,
    condition,
    config_map,
    container,
    deployment,
    log,
    service,
)

BLOG = Kind("weir.dev", "v1alpha1", "Blog", "blogs")
FINALIZER = "weir.dev/blog-cleanup"
DEFAULT_IMAGE = "nginx:1.27"
PAGE_KEY = "index.html"
PAGE_HASH_ANNOTATION = "weir.dev/page-hash"
DOCUMENT_ROOT = "/usr/share/nginx/html"
# A Service is named after the Blog, and Service names are DNS-1035 labels.
DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?")
I32_MAX = 2**31 - 1


@dataclass(frozen=True)
class BlogSpec:
    title: str
    replicas: int = 1
    image: str = DEFAULT_IMAGE

    @classmethod
    def of(cls, blog: Object) -> "BlogSpec":
        """Decode `spec` with the Rust type's rules: `title` required, the rest defaulted, types strict."""
        where = f"Blog {blog.namespace or ''}/{blog.name or ''} is invalid"
        spec = blog.get("spec")
        if not isinstance(spec, dict):
            raise PermanentError(f"{where}: missing field `spec`" if spec is None else f"{where}: spec: expected an object")
        if "title" not in spec:
            raise PermanentError(f"{where}: spec: missing field `title`")
        title, replicas, image = spec["title"], spec.get("replicas", 1), spec.get("image", DEFAULT_IMAGE)
        if not isinstance(title, str):
            raise PermanentError(f"{where}: spec.title: expected a string, got {json.dumps(title)}")
        if isinstance(replicas, bool) or not isinstance(replicas, int) or not -I32_MAX - 1 <= replicas <= I32_MAX:
            raise PermanentError(f"{where}: spec.replicas: expected a 32-bit integer, got {json.dumps(replicas)}")
        if not isinstance(image, str):
            raise PermanentError(f"{where}: spec.image: expected a string, got {json.dumps(image)}")
        return cls(title, replicas, image)


def page(title: str) -> str:
    """The page: a fixed template with the title HTML-escaped."""
    t = html.escape(title, quote=True)
    return (
        "<!DOCTYPE html>\n<html>\n"
        f'<head><meta charset="utf-8"><title>{t}</title></head>\n'
        f"<body><h1>{t}</h1></body>\n</html>\n"
    )


def page_hash(text: str) -> str:
    """On the pod template, so a title change rolls the pods onto the new page."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


class Blog(Reconciler):
    name = "blog"
    version = "0.1.0"
    parent = BLOG
    children = [CONFIG_MAP, DEPLOYMENT, SERVICE]
    finalizer = FINALIZER

    def reconcile(self, blog: Object, observed: Children) -> Outcome:
        spec = BlogSpec.of(blog)
        name = validate(blog.name or "", spec)
        text = page(spec.title)
        # Done even while pods start: readiness only changes through the
        # Deployment's status, which the host watches, so polling adds nothing.
        return Outcome.apply(
            [page_config_map(name, text), web_deployment(name, spec, page_hash(text)), web_service(name)]
        ).status(blog_status(blog, spec, observed.get(DEPLOYMENT, name)))

    def finalize(self, blog: Object, observed: Children, finalizer: str) -> Cleanup:
        # Nothing outside the cluster: the children go with the Blog through
        # their owner references. The finalizer makes the host's path run.
        BlogSpec.of(blog)
        log.info(f"Blog {blog.name} deleted; its {len(observed)} children are garbage-collected by their owner references")
        return Cleanup.complete()


def validate(name: str, spec: BlogSpec) -> str:
    """Rejects what the CRD would, for parents that bypassed it, naming the field."""
    if not DNS1035_LABEL.fullmatch(name):
        raise PermanentError(
            f"metadata.name {json.dumps(name)} cannot name a Service: use at most 63 lowercase letters, digits and '-', "
            "starting with a letter and ending with a letter or digit"
        )
    if not spec.title:
        raise PermanentError(f"Blog {name}: spec.title must not be empty")
    if spec.replicas < 0:
        raise PermanentError(f"Blog {name}: spec.replicas must be >= 0, not {spec.replicas}")
    if not spec.image:
        raise PermanentError(f"Blog {name}: spec.image must not be empty")
    return name


def selector(name: str) -> dict[str, str]:
    """What selectors match: stable for the Blog's life, as a selector must be."""
    return {"app.kubernetes.io/name": "blog", "app.kubernetes.io/instance": name}


def labels(name: str) -> dict[str, str]:
    return {**selector(name), "app.kubernetes.io/managed-by": "weir"}


def page_config_map(name: str, text: str) -> dict[str, Any]:
    return config_map(f"{name}-page", {PAGE_KEY: text}, labels=labels(name))


def web_deployment(name: str, spec: BlogSpec, hash_: str) -> dict[str, Any]:
    web = container(
        "web",
        spec.image,
        ports=[{"name": "http", "containerPort": 80, "protocol": "TCP"}],
        volume_mounts=[{"name": "page", "mountPath": DOCUMENT_ROOT, "readOnly": True}],
    )
    return deployment(
        name,
        replicas=spec.replicas,
        selector=selector(name),
        labels=labels(name),
        pod_labels=labels(name),
        pod_annotations={PAGE_HASH_ANNOTATION: hash_},
        containers=[web],
        volumes=[{"name": "page", "configMap": {"name": f"{name}-page"}}],
    )


def web_service(name: str) -> dict[str, Any]:
    # `protocol` is a key of the ports list under server-side apply: never left to defaulting.
    port = {"name": "http", "port": 80, "protocol": "TCP", "targetPort": "http"}
    return service(name, selector=selector(name), labels=labels(name), ports=[port])


def blog_status(blog: Object, spec: BlogSpec, current: Object | None) -> dict[str, Any]:
    # Absent or null both mean none ready, as `Option<i32>` does in the Rust port.
    ready = (current.path("status.readyReplicas") if current is not None else None) or 0
    holds = ready >= spec.replicas
    status: dict[str, Any] = {}
    if blog.generation is not None:
        status["observedGeneration"] = blog.generation
    status["readyReplicas"] = ready
    status["conditions"] = [
        condition("Ready", holds, "ReplicasReady" if holds else "ReplicasNotReady", f"{ready} of {spec.replicas} replicas ready")
    ]
    return status
