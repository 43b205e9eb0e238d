"""The waitress internals the front end uses are checked by name
(``frontend.waitress_internals``), and the front end falls back to stock
waitress, saying why, when one is missing."""

from __future__ import annotations

import configparser
import dataclasses
import inspect
import logging
import os
import time
import types
from typing import Any

import fixtures
import testtools
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from baremetal_allocclient.server.frontend import options, stock
from baremetal_allocclient.server.frontend import server as frontend
from baremetal_allocclient.server.frontend import waitress_internals as w

#: Every piece the check names (the tables of the fence module).
CLASS_PIECES = [(part, name) for table in (w.OVERRIDDEN, w._CLASS)
                for part, names in table.items() for name in names]
PARAMETER_PIECES = [(part, method, name)
                    for (part, method), names in w._PARAMETERS.items()
                    for name in names]
INSTANCE_PIECES = [(part, name) for part, names in w._INSTANCE.items()
                   for name in names]


class _Gone:
    """A class attribute that is not there (``hasattr`` is False)."""

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        raise AttributeError("gone")


class _Without:
    """``wrapped`` without its attribute ``name``."""

    def __init__(self, wrapped: Any, name: str) -> None:
        self._wrapped, self._name = wrapped, name

    def __getattr__(self, attr: str) -> Any:
        if attr == self._name:
            raise AttributeError(attr)
        return getattr(self._wrapped, attr)


def _installed() -> w.Waitress:
    found = w.installed()
    assert found is not None
    return found


def _replace(part: str, stand_in: Any) -> w.Waitress:
    return dataclasses.replace(_installed(), **{part: stand_in})


def without_class_piece(part: str, name: str) -> w.Waitress:
    """The installed waitress, its ``part`` lacking the class attribute
    (or module attribute) ``name``."""
    real = getattr(_installed(), part)
    if isinstance(real, types.ModuleType):
        return _replace(part, types.SimpleNamespace(
            **{key: getattr(real, key) for key in dir(real) if key != name}))
    return _replace(part, type("StandIn", (real,), {name: _Gone()}))


def with_changed_parameters(part: str, method: str, name: str
                            ) -> w.Waitress:
    """The installed waitress, ``part.method`` without parameter ``name``
    (as a release renaming it would have it)."""
    real = getattr(_installed(), part)
    original = getattr(real, method)

    def changed(*args: Any, **kwargs: Any) -> Any:
        return original(*args, **kwargs)

    signature = inspect.signature(original)
    changed.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[p for p in signature.parameters.values()
                    if p.name != name])
    if isinstance(real, types.ModuleType):
        return _replace(part, types.SimpleNamespace(
            **{key: getattr(real, key) for key in dir(real)
               if key != method}, **{method: changed}))
    return _replace(part, type("StandIn", (real,), {method: changed}))


def without_instance_piece(part: str, dotted: str) -> w.Waitress:
    """The installed waitress, whose ``part`` instances lack ``dotted``
    (an attribute, or one of an attribute's)."""
    real = getattr(_installed(), part)
    head, _, tail = dotted.partition(".")

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        real.__init__(self, *args, **kwargs)
        if not tail:
            self.__dict__.pop(head, None)
        elif head.endswith("[-1]"):
            items = getattr(self, head[:-4])
            items[-1] = _Without(items[-1], tail)
        else:
            setattr(self, head, _Without(getattr(self, head), tail))

    __init__.__signature__ = inspect.signature(  # type: ignore[attr-defined]
        real.__init__)
    body: dict[str, Any] = {"__init__": __init__}
    if not tail:
        body[head] = _Gone()
    return _replace(part, type("StandIn", (real,), body))


class CheckTests(testtools.TestCase):
    def test_the_installed_waitress_has_every_piece(self) -> None:
        """Fails, naming each piece, on a waitress that changed one."""
        self.assertEqual([], w.missing())
        self.assertEqual((), w.MISSING)

    def test_the_requirement_allows_only_the_tested_releases(self) -> None:
        """setup.cfg's upper bound is the check's: a new minor release
        is allowed once this module was tested with it."""
        config = configparser.ConfigParser()
        config.read(os.path.join(os.path.dirname(w.__file__), *[os.pardir] * 3,
                                 "setup.cfg"))
        server = config["extras"]["server"].split()
        self.assertIn("waitress" + w.TESTED, server)
        self.assertIn(Version(w.version()), SpecifierSet(w.TESTED))

    def test_pieces_the_front_end_is_known_for_are_checked(self) -> None:
        for piece in ("outbufs", "outbuf_lock", "requests"):
            self.assertIn(("channel", piece), INSTANCE_PIECES)
        for piece in ("total_outbufs_len", "current_outbuf_count"):
            self.assertIn(("channel", piece), CLASS_PIECES)
        self.assertIn(("adjustments", "outbuf_high_watermark"),
                      INSTANCE_PIECES)
        self.assertIn(("server", "trigger._closed"), INSTANCE_PIECES)

    def test_a_class_attribute_gone_is_named(self) -> None:
        for part, name in CLASS_PIECES:
            found = w.missing(without_class_piece(part, name))
            self.assertIn(f"{w._NAMES[part]}.{name}", found)

    def test_a_parameter_gone_is_named(self) -> None:
        for part, method, name in PARAMETER_PIECES:
            found = w.missing(with_changed_parameters(part, method, name))
            self.assertIn(f"{w._NAMES[part]}.{method}({name})", found)

    def test_an_instance_attribute_gone_is_named(self) -> None:
        for part, dotted in INSTANCE_PIECES:
            found = w.missing(without_instance_piece(part, dotted))
            named = f"{w._NAMES[part]}().{dotted}"
            self.assertIn(named, found)
            # And only it, or the pieces below it (outbufs[-1].append).
            head = named.partition("[")[0]
            self.assertEqual([], [piece for piece in found
                                  if not piece.startswith(head)])

    def test_a_constructor_that_fails_is_named(self) -> None:
        server = _installed().server

        def refuses(*args: Any, **kwargs: Any) -> None:
            raise TypeError("unexpected keyword argument 'bind_socket'")

        refuses.__signature__ = inspect.signature(  # type: ignore[attr-defined]
            server.__init__)
        found = w.missing(_replace("server", type(
            "StandIn", (server,), {"__init__": refuses})))
        self.assertEqual(1, len(found))
        self.assertIn("bind_socket", found[0])


def _app(environ: Any, start_response: Any) -> list[bytes]:
    start_response("200 OK", [("Content-Length", "2")])
    return [b"ok"]


def _front_end() -> frontend.FrontEnd:
    return frontend.FrontEnd(
        _app, "127.0.0.1", 0, options.FrontEndOptions(2, 5.0, 5.0, 10),
        backlog=8, max_header=1024, max_body=1024)


class FallbackTests(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.log = self.useFixture(fixtures.FakeLogger(
            name=frontend.__name__, level=logging.WARNING))
        self.useFixture(fixtures.EnvironmentVariable(frontend.STOCK_ENV))

    def test_a_missing_piece_means_stock_waitress_and_one_warning(
            self) -> None:
        piece = "waitress.channel.HTTPChannel().outbufs"
        self.useFixture(fixtures.MonkeyPatch(
            "baremetal_allocclient.server.frontend.waitress_internals."
            "MISSING", (piece,)))
        front = _front_end()
        self.assertIsInstance(front.impl, stock.StockFrontEnd)
        self.assertEqual(1, self.log.output.count("Serving with stock"))
        self.assertIn(f"lacks {piece}", self.log.output)
        self.assertIn(w.TESTED, self.log.output)
        for lost in ("--request-timeout", "does not read its answer",
                     "go round", "TLS is refused"):
            self.assertIn(lost, self.log.output)

    def test_the_tested_waitress_means_the_fenced_front_end(self) -> None:
        front = _front_end()
        self.assertEqual("FencedFrontEnd", type(front.impl).__name__)
        self.assertEqual("", self.log.output)

    def test_the_environment_variable_forces_stock_waitress(self) -> None:
        self.useFixture(fixtures.EnvironmentVariable(frontend.STOCK_ENV,
                                                     "1"))
        front = _front_end()
        self.assertIsInstance(front.impl, stock.StockFrontEnd)
        self.assertIn(f"{frontend.STOCK_ENV} is set", self.log.output)


class GateTests(testtools.TestCase):
    """What the stock front end's stop waits for."""

    def test_a_request_counts_until_its_answer_is_made(self) -> None:
        closed: list[bool] = []

        class Streamed:
            def __iter__(self) -> Any:
                yield b"a"
                yield b"b"

            def close(self) -> None:
                closed.append(True)

        gate = stock.Gate(lambda environ, start: Streamed())
        body = iter(gate({}, lambda *args: None))
        self.assertEqual(b"a", next(body))
        self.assertFalse(gate.wait_idle(time.monotonic() + 0.05))
        body.close()  # as waitress does with a client gone
        self.assertEqual([True], closed)
        self.assertTrue(gate.wait_idle(time.monotonic()))
        listed = stock.Gate(_app)
        self.assertEqual([b"ok"], listed({}, lambda *args: None))
        self.assertTrue(listed.wait_idle(time.monotonic()))

    def test_a_failing_application_counts_no_more(self) -> None:
        def fails(environ: Any, start_response: Any) -> list[bytes]:
            raise RuntimeError("boom")

        gate = stock.Gate(fails)
        self.assertRaises(RuntimeError, gate, {}, lambda *args: None)
        self.assertTrue(gate.wait_idle(time.monotonic()))

    def test_once_closed_every_request_is_answered_503(self) -> None:
        called: list[bool] = []
        statuses: list[str] = []

        def app(environ: Any, start_response: Any) -> list[bytes]:
            called.append(True)
            return []

        gate = stock.Gate(app)
        gate.close()
        body = gate({}, lambda status, headers: statuses.append(status))
        self.assertEqual(["503 Service Unavailable"], statuses)
        self.assertEqual([b"The server is stopping.\r\n"], list(body))
        self.assertEqual([], called)
