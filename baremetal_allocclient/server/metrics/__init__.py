"""What operators see of the fleet over time: Prometheus metrics
(:mod:`.instruments`: this process's counters and histograms;
:mod:`.fleet`: the fleet's figures read from the database, the same
whichever process is scraped), the ``/metrics`` and ``/healthcheck``
endpoints (:mod:`.endpoints`), and the audit line of every allocation
change (:mod:`.audit`).

Wiring-level, like ``services.py``: the wings report through the small
:class:`~baremetal_allocclient.server.metrics.instruments.Instruments`
object they are given (no prometheus_client import in a wing).
"""
