"""Create, wait and release as separate steps, handling each failure."""

import os
import sys

from baremetal_allocclient import exceptions
from baremetal_allocclient.v1 import Client, Progress

endpoint = os.environ.get("OS_ENDPOINT", "http://127.0.0.1:6385")
client = Client.from_endpoint(endpoint)


def report(progress: Progress) -> None:
    """Called after every poll round while the allocation is pending."""
    print(f"  still allocating after {progress.elapsed:.2f} s",
          file=sys.stderr)


for traits in (["CUSTOM_GPU"], ["CUSTOM_FPGA"]):
    # POST /v1/allocations answers at once, in state "allocating".
    created = client.create_allocation("baremetal", traits=traits)
    try:
        done = client.wait_for_allocation(
            created, timeout=60, on_progress=report
        )
    except exceptions.AllocationFailed as exc:
        # The allocation ended in "error"; last_error says which filter
        # left no node.  A failed allocation still exists: delete it.
        print(f"{traits}: failed: {exc.last_error}")
        client.delete_allocation(created.ident)
    except exceptions.WaitTimeout as exc:
        print(f"{traits}: gave up in state {exc.last_state}")
        client.delete_allocation(created.ident)
    else:
        print(f"{traits}: got node {done.node_uuid}")
        client.delete_allocation(done.ident)

# Errors from the API are typed, and carry the server's message.
try:
    client.get_allocation("no-such-allocation")
except exceptions.NotFound as exc:
    print(f"HTTP {exc.status_code}: {exc.message}")
