"""The test suite."""

from hypothesis import settings

# No property test is timed: hypothesis's 200 ms deadline per example
# failed tests on a loaded machine ("Unreliable test timings"), and the
# suite's timed assertions are only the limits a user is promised.  A
# test's own settings() inherit this.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")
