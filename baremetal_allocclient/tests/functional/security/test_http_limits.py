"""Request-size and shape limits enforced by a running server."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import testtools

from baremetal_allocclient.server.api import limits
from baremetal_allocclient.tests.fixtures.inprocess import (
    InProcessServer,
    serve_for_class,
)


class HttpLimitTests(testtools.TestCase):

    server: InProcessServer

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.server = serve_for_class(cls)

    def _message(self, response: object) -> str:
        import requests

        assert isinstance(response, requests.Response)
        text = json.loads(response.json()["error_message"])["faultstring"]
        return str(text)

    def test_body_over_one_mebibyte_is_413(self) -> None:
        body = {"resource_class": "rc", "extra": {"k": "x" * (1 << 20)}}
        response = self.server.request("POST", "/v1/allocations", body)
        self.assertEqual(413, response.status_code)

    def test_deep_json_is_400(self) -> None:
        depth = limits.MAX_JSON_DEPTH + 1
        raw = '{"resource_class": "rc", "extra": ' + '{"a": ' * (depth - 1)
        raw += "1" + "}" * depth
        response = self.server.request(
            "POST", "/v1/allocations", data=raw,
            headers={"Content-Type": "application/json"})
        self.assertEqual(400, response.status_code)
        self.assertIn("nested too deeply", self._message(response))
        response = self.server.request(
            "POST", "/v1/allocations", data="[" * 100000,
            headers={"Content-Type": "application/json"})
        self.assertEqual(400, response.status_code)

    def test_unknown_query_parameter_is_400(self) -> None:
        response = self.server.request("GET", "/v1/allocations?stat=active")
        self.assertEqual(400, response.status_code)
        self.assertIn("'stat'", self._message(response))
        response = self.server.request(
            "DELETE", "/v1/allocations/x?force=1")
        self.assertEqual(400, response.status_code)

    def test_long_list_fields_are_400_with_a_short_message(self) -> None:
        response = self.server.request("POST", "/v1/allocations", {
            "resource_class": "rc", "candidate_nodes": ["n"] * 1001})
        self.assertEqual(400, response.status_code)
        self.assertLess(len(response.text), 2000)
        response = self.server.request("POST", "/v1/allocations", {
            "resource_class": "r" * 100000})
        self.assertEqual(400, response.status_code)
        self.assertLess(len(response.text), 2000)

    def test_oversized_headers_are_refused(self) -> None:
        with socket.create_connection(("127.0.0.1", self.server.port),
                                      timeout=10) as sock:
            sock.sendall(b"GET /v1/nodes HTTP/1.1\r\nHost: x\r\nX-Big: "
                         + b"a" * (100 * 1024) + b"\r\n\r\n")
            self.assertIn(b" 431 ", sock.recv(200))
        self.assertEqual(200, self.server.request(
            "GET", "/v1/nodes", headers={"X-Big": "a" * 30000}).status_code)

    def test_chunked_body_over_the_limit_is_413(self) -> None:
        def chunks() -> Iterator[bytes]:
            yield b'{"resource_class": "rc", "extra": {"k": "'
            for _ in range(3):
                yield b"x" * (1 << 19)
            yield b'"}}'

        response = self.server.request(
            "POST", "/v1/allocations", data=chunks(),
            headers={"Content-Type": "application/json"})
        self.assertEqual(413, response.status_code, response.text)
        small = self.server.request(
            "POST", "/v1/allocations",
            data=iter([b'{"resource_class": ', b'"rc-chunked"}']),
            headers={"Content-Type": "application/json"})
        self.assertEqual(201, small.status_code, small.text)

    def test_a_content_length_of_any_size_is_413(self) -> None:
        """Issue 52: a ``Content-Length`` of more than 4,300 digits
        (CPython's limit on ``int()`` of a decimal string) closed the
        connection without an answer, and the server logged waitress's
        "uncaptured python exception"; now it is 413, as one of 30
        digits is."""
        for digits in (30, 4301, 60_000):
            with socket.create_connection(("127.0.0.1", self.server.port),
                                          timeout=10) as sock:
                sock.sendall(b"POST /v1/allocations HTTP/1.1\r\nHost: x\r\n"
                             b"Content-Length: " + b"9" * digits
                             + b"\r\n\r\n")
                self.assertIn(b" 413 ", sock.recv(200), digits)
        for bad in (b"-1", b"1_000", b"\xd9\xa3"):  # Arabic-Indic three
            with socket.create_connection(("127.0.0.1", self.server.port),
                                          timeout=10) as sock:
                sock.sendall(b"POST /v1/allocations HTTP/1.1\r\nHost: x\r\n"
                             b"Content-Length: " + bad + b"\r\n\r\n")
                self.assertIn(b" 400 ", sock.recv(200), bad)
        self.assertEqual(200, self.server.request(
            "GET", "/v1/nodes").status_code)
