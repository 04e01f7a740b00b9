"""The Blog's rules that the shared fixtures do not pin one by one."""

import json
import unittest

from blog import Blog, BlogSpec, Post, page, page_hash
from weir_reconciler import CONFIG_MAP, Object, PermanentError, Selection, log


def blog(name="my-blog", **spec):
    return {"apiVersion": "weir.dev/v1alpha1", "kind": "Blog", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def reconcile(parent, observed=()):
    return Blog().handle_reconcile(json.dumps(parent), [json.dumps(o) for o in observed])


class PageTest(unittest.TestCase):
    def test_page_hash_known_answers_from_the_readme(self):
        self.assertEqual(page_hash(page("My Blog")), "6d2f490c2a7e4282")
        self.assertEqual(page_hash(page("Hello")), "f9c59828cafddb46")

    def test_the_title_is_escaped_like_html_escape_with_quotes(self):
        self.assertIn("<h1>a &amp; b &lt;c&gt; &quot;d&quot; &#x27;e&#x27;</h1>", page("a & b <c> \"d\" 'e'"))


    def test_the_readme_example_with_a_theme_and_two_posts(self):
        posts = (Post("Hello", "It works."), Post("Fish & Chips", ""))
        self.assertEqual(
            page("My Blog", "h1 { color: red; }", posts),
            "<!DOCTYPE html>\n<html>\n"
            '<head><meta charset="utf-8"><title>My Blog</title><style>h1 { color: red; }</style></head>\n'
            "<body><h1>My Blog</h1>\n"
            "<article><h2>Hello</h2><p>It works.</p></article>\n"
            "<article><h2>Fish &amp; Chips</h2><p></p></article>\n"
            "</body>\n</html>\n",
        )

    def test_css_cannot_close_the_style_element(self):
        self.assertIn("<style>a\\3c /style>b</style>", page("T", "a</style>b"))


def config_map(name, labels=None, **data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default", "labels": labels or {}}, "data": data}


class RelatedTest(unittest.TestCase):
    def test_a_blog_without_theme_or_posts_selects_nothing(self):
        self.assertEqual(Blog().handle_select(json.dumps(blog(title="T"))), [])

    def test_select_decodes_the_parent_like_reconcile(self):
        with self.assertRaises(PermanentError) as caught:
            Blog().handle_select(json.dumps(blog(title="T", postsSelector={"matchExpressions": [{"key": "a", "operator": "Near"}]})))
        self.assertIn("spec.postsSelector.matchExpressions[0].operator", caught.exception.message)
        with self.assertRaises(PermanentError):
            Blog().handle_select(json.dumps(blog(title="T", theme=3)))

    def test_select_asks_for_the_theme_by_name_then_the_posts_by_selector(self):
        parent = blog(title="T", theme="dark", postsSelector={"matchLabels": {"blog": "b"}})
        self.assertEqual(
            Blog().handle_select(json.dumps(parent)),
            [Selection.by_name(CONFIG_MAP, "dark"), Selection.by_labels(CONFIG_MAP, {"matchLabels": {"blog": "b"}})],
        )

    def test_the_theme_itself_is_a_post_only_if_the_selector_matches_it(self):
        parent = blog(title="T", theme="dark", postsSelector={"matchLabels": {"blog": "b"}})
        related = [config_map("dark", **{"style.css": "x", "title": "not a post"}), config_map("p", {"blog": "b"}, title="Post")]
        text = Blog().handle_reconcile(json.dumps(parent), [], [json.dumps(o) for o in related]).children[0]["data"]["index.html"]
        self.assertIn("<style>x</style>", text)
        self.assertEqual(text.count("<article>"), 1)

    def test_a_theme_that_appears_makes_the_blog_ready_and_rolls_the_page(self):
        parent = blog(title="T", theme="dark")
        missing = Blog().handle_reconcile(json.dumps(parent), [], [])
        found = Blog().handle_reconcile(json.dumps(parent), [], [json.dumps(config_map("dark", **{"style.css": "x"}))])
        self.assertEqual(missing.desired_status["conditions"][0]["reason"], "ThemeNotFound")
        self.assertEqual(found.desired_status["conditions"][0]["reason"], "ReplicasNotReady")
        hash_of = lambda o: o.children[1]["spec"]["template"]["metadata"]["annotations"]["weir.dev/page-hash"]
        self.assertNotEqual(hash_of(missing), hash_of(found))


class ValidationTest(unittest.TestCase):
    def assert_permanent(self, parent, fragment):
        with self.assertRaises(PermanentError) as caught:
            reconcile(parent)
        self.assertIn(fragment, caught.exception.message)

    def test_a_name_that_cannot_name_a_service_is_refused(self):
        for name in ("My-Blog", "1blog", "blog-", "b" * 64, "", "blog\n"):
            with self.subTest(name=name):
                self.assert_permanent(blog(name, title="T"), "cannot name a Service")

    def test_a_63_character_name_is_fine(self):
        self.assertEqual(reconcile(blog("b" * 63, title="T")).children[2]["metadata"]["name"], "b" * 63)

    def test_empty_title_and_image_are_refused_in_the_readme_order(self):
        self.assert_permanent(blog(title=""), "Blog my-blog: spec.title must not be empty")
        self.assert_permanent(blog(title="T", replicas=-3), "Blog my-blog: spec.replicas must be >= 0, not -3")
        self.assert_permanent(blog(title="T", image=""), "Blog my-blog: spec.image must not be empty")
        self.assert_permanent(blog(title="", replicas=-1), "spec.title")

    def test_wrong_types_are_refused_like_the_typed_rust_decode(self):
        self.assert_permanent(blog(title=7), "spec.title")
        self.assert_permanent(blog(title="T", replicas="2"), "spec.replicas")
        self.assert_permanent(blog(title="T", replicas=True), "spec.replicas")
        self.assert_permanent(blog(title="T", replicas=2**31), "spec.replicas")
        self.assert_permanent(blog(title="T", image=None), "spec.image")
        self.assert_permanent({"metadata": {"name": "b", "namespace": "ns"}}, "Blog ns/b is invalid: missing field `spec`")

    def test_unknown_fields_are_ignored(self):
        self.assertEqual(BlogSpec.of(Object(blog(title="T", colour="red"))), BlogSpec("T", 1, "nginx:1.27"))


class StatusTest(unittest.TestCase):
    def test_ready_counts_the_observed_deployment_of_the_same_name_only(self):
        other = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "other"}, "status": {"readyReplicas": 9}}
        mine = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "my-blog"}, "status": {"readyReplicas": 3}}
        status = reconcile(blog(title="T", replicas=3), [other, mine]).desired_status
        self.assertEqual(status["readyReplicas"], 3)
        self.assertEqual(status["conditions"][0]["status"], "True")
        self.assertEqual(reconcile(blog(title="T", replicas=3), [other]).desired_status["readyReplicas"], 0)

    def test_observed_generation_is_omitted_when_the_parent_has_none(self):
        self.assertNotIn("observedGeneration", reconcile(blog(title="T")).desired_status)

    def test_zero_replicas_is_ready_at_once(self):
        condition = reconcile(blog(title="T", replicas=0)).desired_status["conditions"][0]
        self.assertEqual((condition["status"], condition["message"]), ("True", "0 of 0 replicas ready"))


class FinalizeTest(unittest.TestCase):
    def test_finalize_completes_and_logs_one_line(self):
        with self.assertLogs("weir_reconciler", "INFO") as logs:
            cleanup = Blog().handle_finalize(json.dumps(blog(title="T")), [], "weir.dev/blog-cleanup")
        self.assertTrue(cleanup.is_complete)
        self.assertEqual(len(logs.records), 1)
        self.assertIn("Blog my-blog deleted", logs.records[0].getMessage())

    def test_finalize_still_decodes_the_parent(self):
        with self.assertRaises(PermanentError):
            Blog().handle_finalize(json.dumps(blog()), [], "weir.dev/blog-cleanup")


if __name__ == "__main__":
    unittest.main()
