"""Say once what to allocate, then explain it, reserve it, and reserve a
group of it."""

import dataclasses
import os

from baremetal_allocclient.constraints import Constraints, property_constraint
from baremetal_allocclient.leases import expires_at, utcnow
from baremetal_allocclient.v1 import AllocationRequest, Client

endpoint = os.environ.get("OS_ENDPOINT", "http://127.0.0.1:6385")
client = Client.from_endpoint(endpoint)

# A node with a GPU and at least 64 GiB of memory, for two hours.
big_gpu = AllocationRequest(
    "baremetal",
    traits=["CUSTOM_GPU"],
    constraints=Constraints(
        properties=(property_constraint("memory_mb", "min", 65536),)
    ),
    lease="2h",
)

funnel = client.explain(big_gpu)
print(f"{funnel['candidates']} nodes qualify")

allocation = client.allocate(big_gpu, timeout=120)
try:
    end = expires_at(allocation.marks)
    assert end is not None
    hours = (end - utcnow()).total_seconds() / 3600
    print(f"{allocation.name or 'unnamed'}: lease ends in {hours:.0f}h")
finally:
    client.delete_allocation(allocation.ident)

# The same request, named, for two nodes at once (all or nothing).
pair = client.allocate_group(
    2, dataclasses.replace(big_gpu, name="gpu-pair"), timeout=120
)
print(" ".join(sorted(str(member.name) for member in pair)))
print(f"released {len(client.release_group('gpu-pair'))}")
