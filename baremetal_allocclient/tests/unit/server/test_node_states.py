"""The fake-hardware state machine table."""

from __future__ import annotations

import testtools

from baremetal_allocclient.server import node_states as ns


class TransitionTests(testtools.TestCase):
    def test_table(self) -> None:
        cases = [
            ("manage", "enroll", [("verifying", "manageable")],
             "manageable"),
            ("manage", "available", [], "manageable"),
            ("provide", "manageable", [("cleaning", "available")],
             "available"),
            ("active", "available", [("deploying", "active")], "active"),
            ("deploy", "available", [("deploying", "active")], "active"),
            ("deleted", "active",
             [("deleting", "available"), ("cleaning", "available")],
             "available"),
            ("undeploy", "deploy failed",
             [("deleting", "available"), ("cleaning", "available")],
             "available"),
            ("inspect", "manageable", [("inspecting", "manageable")],
             "manageable"),
            ("inspect", "inspect failed", [("inspecting", "manageable")],
             "manageable"),
        ]
        for verb, start, steps, final in cases:
            transition = ns.transition_for(verb, start)
            assert transition is not None, (verb, start)
            self.assertEqual(tuple(steps), transition.steps)
            self.assertEqual(final, transition.final)

    def test_refused(self) -> None:
        for verb, start in [("provide", "enroll"), ("active", "enroll"),
                            ("manage", "manageable"), ("deleted",
                                                       "available"),
                            ("bogus", "available"),
                            ("active", "deploying"),
                            ("inspect", "available"),
                            ("inspect", "enroll")]:
            self.assertIsNone(ns.transition_for(verb, start))

    def test_only_undeploy_releases(self) -> None:
        releases = set()
        for verb, start in [("manage", "enroll"), ("provide", "manageable"),
                            ("active", "available"), ("deleted", "active")]:
            transition = ns.transition_for(verb, start)
            assert transition is not None
            if transition.releases_allocation:
                releases.add(verb)
        self.assertEqual({"deleted"}, releases)

    def test_remaining_steps(self) -> None:
        cases = [
            ("verifying", "manageable", (("manageable", None),)),
            ("deleting", "available",
             (("cleaning", "available"), ("available", None))),
            ("cleaning", "available", (("available", None),)),
            ("deploying", "active", (("active", None),)),
            ("active", None, None),
            ("cleaning", "manageable", None),
        ]
        for state, target, expected in cases:
            self.assertEqual(expected,
                             ns.remaining_steps(state, target or ""))

    def test_power_and_initial_state(self) -> None:
        self.assertEqual("power on", ns.power_result("rebooting"))
        self.assertEqual("power off", ns.power_result("soft power off"))
        self.assertIsNone(ns.power_result("dim"))
        self.assertEqual("available", ns.initial_state(10))
        self.assertEqual("enroll", ns.initial_state(11))
