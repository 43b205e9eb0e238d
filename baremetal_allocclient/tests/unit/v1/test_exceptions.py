"""Error body parsing and the exception hierarchy."""

from __future__ import annotations

import json

import testtools

from baremetal_allocclient import exceptions
from baremetal_allocclient.tests.unit.v1 import fakes
from baremetal_allocclient.v1 import Allocation


class ParseErrorBodyTest(testtools.TestCase):

    def test_ironic_bodies(self) -> None:
        nested = json.dumps(fakes.ironic_error("Node x could not be found."))
        described = json.dumps({"error_message": json.dumps({
            "code": "406", "title": "Not Acceptable",
            "description": "Version 1.99 was requested"})})
        table = [
            (nested, "Node x could not be found."),
            (described, "Version 1.99 was requested"),
            (json.dumps({"error_message": {"faultstring": "as object"}}),
             "as object"),
            (json.dumps({"error_message": "not json inside"}),
             "not json inside"),
            (json.dumps({"error": {"message": "keystone style"}}),
             "keystone style"),
            (json.dumps({"errors": [{"title": "T", "detail": "D"}]}), "D"),
            ("<html>\nBad Gateway</html>", "<html>"),
            (b"plain bytes", "plain bytes"),
            ("", None),
            (None, None),
            ("{}", None),
        ]
        for body, expected in table:
            message, _doc = exceptions.parse_error_body(body)
            self.assertEqual(expected, message, body)

    def test_from_response_classes(self) -> None:
        table = {400: exceptions.BadRequest, 401: exceptions.Unauthorized,
                 403: exceptions.Forbidden, 404: exceptions.NotFound,
                 405: exceptions.MethodNotAllowed,
                 406: exceptions.NotAcceptable, 409: exceptions.Conflict,
                 500: exceptions.ServerError, 504: exceptions.ServerError,
                 503: exceptions.ServiceUnavailable,
                 429: exceptions.HttpError}
        for status, cls in table.items():
            error = exceptions.from_response(status, None, reason="R",
                                             request_id="req-9")
            self.assertIs(cls, type(error))
            self.assertIsInstance(error, exceptions.ClientError)
            self.assertEqual(status, error.status_code)
            self.assertEqual("R", error.message)
            self.assertEqual(f"R (HTTP {status}) (Request-ID: req-9)",
                             str(error))
        self.assertTrue(issubclass(exceptions.ServiceUnavailable,
                                   exceptions.ServerError))

    def test_messages(self) -> None:
        error = exceptions.VersionNotSupported(
            "updating allocations", (1, 57), server_min=(1, 1),
            server_max=(1, 56))
        self.assertEqual(
            "updating allocations requires bare metal API version 1.57 or "
            "newer; the server supports 1.1 to 1.56", str(error))
        alloc = Allocation(uuid="a1", name="web-1", state="allocating")
        self.assertIn("web-1 (last state: allocating)",
                      str(exceptions.WaitTimeout([alloc], 2.5)))
        many = [Allocation(uuid=f"a{i}", state="allocating")
                for i in range(5)]
        text = str(exceptions.WaitTimeout(many, 10))
        self.assertIn("5 allocations (a0, a1, a2 and 2 more)", text)
        failed = exceptions.AllocationFailed(alloc, None)
        self.assertEqual("Allocation web-1 failed: no reason given",
                         str(failed))
        down = exceptions.ConnectionFailed("http://h:1", "Connection refused")
        self.assertIn("http://h:1", str(down))
        self.assertIsInstance(exceptions.InvalidArgument("x"), ValueError)


class TestExportedFromV1(testtools.TestCase):
    def test_every_exception_type_is_importable_from_v1(self) -> None:
        """``from baremetal_allocclient.v1 import NotFound`` and the rest."""
        import inspect

        from baremetal_allocclient import exceptions as exc_module
        from baremetal_allocclient import v1

        types_ = [obj for _, obj in inspect.getmembers(exc_module,
                                                        inspect.isclass)
                  if issubclass(obj, BaseException)
                  and obj.__module__ == exc_module.__name__]
        self.assertGreater(len(types_), 15)
        for cls in types_:
            self.assertIs(cls, getattr(v1, cls.__name__, None),
                          cls.__name__)
            self.assertIn(cls.__name__, v1.__all__)


class TestNoTestHooksInPublicSignatures(testtools.TestCase):
    def test_public_callables_take_no_clock_sleep_or_rng(self) -> None:
        import inspect

        from baremetal_allocclient import v1
        from baremetal_allocclient.osc import progress

        hooks = {"clock", "sleep", "rng", "interval"}
        callables = [progress.TtyProgress]
        for name in v1.__all__:
            obj = getattr(v1, name)
            if inspect.isclass(obj):
                callables.append(obj)
                callables.extend(
                    member for member_name, member in vars(obj).items()
                    if not member_name.startswith("_")
                    and callable(getattr(obj, member_name, None)))
        for func in callables:
            target = getattr(func, "__func__", func)
            try:
                params = inspect.signature(target).parameters
            except (TypeError, ValueError):
                continue
            self.assertEqual(set(), hooks & set(params), func)
        client = v1.Client.from_endpoint("http://127.0.0.1:1")
        self.assertFalse(hasattr(client, "rng"))
