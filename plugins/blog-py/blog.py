"""The Blog reconciler in Python: a ConfigMap with the page, a Deployment serving it, and a Service.

A port of the Rust Blog plugin (plugins/blog); plugins/blog/README.md
specifies every field and plugins/blog/fixtures pins them, so both answer
the same JSON for the same Blog. The children depend on the spec and the
related ConfigMaps the Blog selected (its theme by name, its posts by label
selector), never on what was observed, so a child edited by hand is put back
at the next reconcile; only the status reads an observed child (the
Deployment's `readyReplicas`).
"""

from __future__ import annotations

import hashlib
import html
import json
import re
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from weir_reconciler import (
    CONFIG_MAP,
    DEPLOYMENT,
    SERVICE,
    Children,
    Cleanup,
    Kind,
    LabelSelector,
    Object,
    Objects,
    Outcome,
    PermanentError,
    Reconciler,
    Selection,
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
#: The theme's key holding the CSS; a post's keys holding its title (required) and body.
STYLE_KEY = "style.css"
POST_TITLE_KEY = "title"
POST_BODY_KEY = "body"
OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


@dataclass(frozen=True)
class BlogSpec:
    title: str
    replicas: int = 1
    image: str = DEFAULT_IMAGE
    theme: Optional[str] = None
    #: `spec.postsSelector` as the Rust type reads it: both lists present, `values` defaulted.
    posts_selector: Optional[dict] = None

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
        theme = spec.get("theme")
        if theme is not None and not isinstance(theme, str):
            raise PermanentError(f"{where}: spec.theme: expected a string, got {json.dumps(theme)}")
        posts = spec.get("postsSelector")
        return cls(title, replicas, image, theme, None if posts is None else posts_selector(posts, f"{where}: spec.postsSelector"))


def posts_selector(value: Any, where: str) -> dict:
    """`spec.postsSelector` decoded strictly, as serde decodes the Rust `PostsSelector`."""
    if not isinstance(value, dict):
        raise PermanentError(f"{where}: expected an object, got {json.dumps(value)}")
    labels = value.get("matchLabels")
    labels = {} if labels is None else labels
    if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
        raise PermanentError(f"{where}.matchLabels: expected a map of strings, got {json.dumps(labels)}")
    expressions = value.get("matchExpressions")
    expressions = [] if expressions is None else expressions
    if not isinstance(expressions, list):
        raise PermanentError(f"{where}.matchExpressions: expected a list, got {json.dumps(expressions)}")
    requirements = []
    for i, e in enumerate(expressions):
        at = f"{where}.matchExpressions[{i}]"
        if not isinstance(e, dict):
            raise PermanentError(f"{at}: expected an object, got {json.dumps(e)}")
        for field in ("key", "operator"):
            if field not in e:
                raise PermanentError(f"{at}: missing field `{field}`")
        if not isinstance(e["key"], str):
            raise PermanentError(f"{at}.key: expected a string, got {json.dumps(e['key'])}")
        if e["operator"] not in OPERATORS:
            raise PermanentError(f"{at}.operator: unknown variant {json.dumps(e['operator'])}, expected one of {', '.join(OPERATORS)}")
        values = e.get("values")
        values = [] if values is None else values
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise PermanentError(f"{at}.values: expected a list of strings, got {json.dumps(values)}")
        requirements.append({"key": e["key"], "operator": e["operator"], "values": list(values)})
    return {"matchLabels": dict(labels), "matchExpressions": requirements}


@dataclass(frozen=True)
class Post:
    title: str
    body: str


@dataclass(frozen=True)
class Read:
    """What the Blog read: the theme's CSS (or why it is missing) and the posts in page order."""

    css: Optional[str] = None
    theme_missing: Optional[str] = None
    posts: tuple[Post, ...] = ()


def selections(spec: BlogSpec) -> list[Selection]:
    """The theme by name, then the posts by selector (README, *select*)."""
    selected = []
    if spec.theme is not None:
        selected.append(Selection.by_name(CONFIG_MAP, spec.theme))
    if spec.posts_selector is not None:
        selected.append(Selection.by_labels(CONFIG_MAP, spec.posts_selector))
    return selected


def read(spec: BlogSpec, related: Objects) -> Read:
    """The theme and the posts, from the selected ConfigMaps the host passed."""
    css = theme_missing = None
    if spec.theme is not None:
        theme = related.get(CONFIG_MAP, spec.theme)
        style = (theme.get("data") or {}).get(STYLE_KEY) if theme is not None else None
        if theme is None:
            theme_missing = f"theme ConfigMap {spec.theme} does not exist"
        elif style is None:
            theme_missing = f"theme ConfigMap {spec.theme} has no key {STYLE_KEY}"
        else:
            css = style
    posts: list[Post] = []
    if spec.posts_selector is not None:
        # The theme arrives in the same list, so match again; page order is by name.
        selector = LabelSelector.parse(spec.posts_selector)
        for cm in sorted(related.of_kind(CONFIG_MAP), key=lambda o: (o.name or "").encode("utf-8")):
            data: Mapping[str, str] = cm.get("data") or {}
            if selector.matches(cm.labels) and POST_TITLE_KEY in data:
                posts.append(Post(data[POST_TITLE_KEY], data.get(POST_BODY_KEY, "")))
    return Read(css, theme_missing, tuple(posts))


def page(title: str, css: Optional[str] = None, posts: tuple[Post, ...] = ()) -> str:
    """The page: a fixed template with the title HTML-escaped, the theme inlined, the posts listed."""
    t = html.escape(title, quote=True)
    # `\3c ` is CSS's own escape of `<`: the CSS means the same and cannot close the element.
    style = "" if css is None else "<style>" + css.replace("<", "\\3c ") + "</style>"
    articles = ""
    if posts:
        articles = "\n" + "".join(
            f"<article><h2>{html.escape(p.title, quote=True)}</h2><p>{html.escape(p.body, quote=True)}</p></article>\n"
            for p in posts
        )
    return (
        "<!DOCTYPE html>\n<html>\n"
        f'<head><meta charset="utf-8"><title>{t}</title>{style}</head>\n'
        f"<body><h1>{t}</h1>{articles}</body>\n</html>\n"
    )


def page_hash(text: str) -> str:
    """On the pod template, so a title change rolls the pods onto the new page."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


class Blog(Reconciler):
    name = "blog"
    version = "0.1.0"
    parent = BLOG
    children = [CONFIG_MAP, DEPLOYMENT, SERVICE]
    # The theme and the posts are ConfigMaps the Blog reads but does not own.
    related = [CONFIG_MAP]
    finalizer = FINALIZER

    def select(self, blog: Object) -> list[Selection]:
        return selections(BlogSpec.of(blog))

    def reconcile(self, blog: Object, observed: Children) -> Outcome:
        spec = BlogSpec.of(blog)
        name = validate(blog.name or "", spec)
        found = read(spec, observed.related)
        text = page(spec.title, found.css, found.posts)
        # Done even while pods start: readiness only changes through the
        # Deployment's status, which the host watches, so polling adds nothing.
        return Outcome.apply(
            [page_config_map(name, text), web_deployment(name, spec, page_hash(text)), web_service(name)]
        ).status(blog_status(blog, spec, observed.get(DEPLOYMENT, name), found.theme_missing))

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


def blog_status(blog: Object, spec: BlogSpec, current: Object | None, theme_missing: Optional[str] = None) -> dict[str, Any]:
    # Absent or null both mean none ready, as `Option<i32>` does in the Rust port.
    ready = (current.path("status.readyReplicas") if current is not None else None) or 0
    holds = ready >= spec.replicas
    status: dict[str, Any] = {}
    if blog.generation is not None:
        status["observedGeneration"] = blog.generation
    status["readyReplicas"] = ready
    if theme_missing is not None:
        # A missing theme takes precedence over the replicas.
        ready_condition = condition("Ready", False, "ThemeNotFound", theme_missing)
    else:
        reason = "ReplicasReady" if holds else "ReplicasNotReady"
        ready_condition = condition("Ready", holds, reason, f"{ready} of {spec.replicas} replicas ready")
    status["conditions"] = [ready_condition]
    return status
