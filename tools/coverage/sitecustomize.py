"""Measure coverage in every Python process of a test run.

``tools/run-tests`` puts this directory first on ``PYTHONPATH`` when
``BAREMETAL_ALLOC_COVERAGE=1``, so the stestr workers and every
``baremetal-alloc-server`` they start measure themselves
(``coverage.process_startup`` acts only when ``COVERAGE_PROCESS_START``
names the configuration). Interpreters without coverage (the peers'
virtualenvs: Ironic, Keystone, Placement) are left alone.
"""

try:
    import coverage
except ImportError:
    pass
else:
    coverage.process_startup()
