"""JSON Patch with Ironic's 400, shared by allocations, nodes and ports."""

from __future__ import annotations

import testtools

from baremetal_allocclient.server.api.errors import as_api_error
from baremetal_allocclient.server.domain import patching
from baremetal_allocclient.server.domain.errors import Invalid


class ApplyTest(testtools.TestCase):
    def test_applies_without_changing_the_document(self) -> None:
        document = {"name": "a", "extra": {"k": "v"}}
        after = patching.apply(document, [
            {"op": "replace", "path": "/name", "value": "b"},
            {"op": "add", "path": "/extra/x", "value": 1},
        ])
        self.assertEqual({"name": "b", "extra": {"k": "v", "x": 1}}, after)
        self.assertEqual({"name": "a", "extra": {"k": "v"}}, document)

    def test_a_patch_that_does_not_apply_is_400(self) -> None:
        for patch in ([{"op": "remove", "path": "/extra/missing"}],
                      [{"op": "test", "path": "/name", "value": "z"}],
                      [{"op": "move", "path": "/x"}],
                      [{"op": "replace", "path": "no-slash", "value": 1}]):
            error = self.assertRaises(Invalid, patching.apply,
                                      {"name": "a", "extra": {}}, patch)
            self.assertEqual(400, as_api_error(error).status, patch)
            self.assertIn("Invalid patch: ", str(error.message), patch)

    def test_the_result_may_stop_being_an_object(self) -> None:
        # The callers decide what that means for their resource.
        self.assertEqual(5, patching.apply(
            {"name": "a"}, [{"op": "replace", "path": "", "value": 5}]))
