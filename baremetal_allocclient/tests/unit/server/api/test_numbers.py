"""The one bounded number parser: any length is measured, not read."""

from __future__ import annotations

import testtools

from baremetal_allocclient.server.api import numbers


class IntegerTests(testtools.TestCase):
    def test_whole_numbers_in_range(self) -> None:
        for text, value in (("0", 0), (" 42 ", 42), ("+7", 7), ("-0", 0),
                            ("0" * 5000 + "9", 9),
                            ("9223372036854775807", 2**63 - 1),
                            ("-9223372036854775808", -(2**63))):
            self.assertEqual(value, numbers.integer(text, "f"), text)

    def test_anything_else_is_not_a_number(self) -> None:
        for text in ("", " ", "-", "+-1", "1.5", "1e3", "0x10", "1_000",
                     "\u0663", "12a", "NaN"):
            error = self.assertRaises(numbers.NotANumber, numbers.integer,
                                      text, "limit")
            self.assertIn("limit: ", str(error))

    def test_out_of_range_however_long(self) -> None:
        for text, above in (("9223372036854775808", True),
                            ("-9223372036854775809", False),
                            ("9" * 10_000, True), ("-" + "1" * 5000, False)):
            error = self.assertRaises(numbers.OutOfRange, numbers.integer,
                                      text, "limit")
            self.assertEqual(above, error.above)
            self.assertEqual("limit", error.field)
            self.assertLess(len(str(error)), 120)  # not echoed whole

    def test_a_narrower_range(self) -> None:
        self.assertEqual(5, numbers.integer("5", "f", minimum=0, maximum=5))
        error = self.assertRaises(numbers.OutOfRange, numbers.integer, "6",
                                  "f", minimum=0, maximum=5)
        self.assertIn("must be between 0 and 5", str(error))
        self.assertRaises(numbers.OutOfRange, numbers.integer, "-1", "f",
                          minimum=0)

    def test_quoted_cuts_long_text(self) -> None:
        self.assertEqual("12345", numbers.quoted("12345"))
        self.assertEqual("999999999999...(400 characters)",
                         numbers.quoted("9" * 400))
