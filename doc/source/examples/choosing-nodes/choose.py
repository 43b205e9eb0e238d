"""Reserve a node by its properties; explain when there is none."""

import os

from baremetal_allocclient import exceptions
from baremetal_allocclient.constraints import (
    Constraints,
    Op,
    property_constraint,
)
from baremetal_allocclient.v1 import Client

endpoint = os.environ.get("OS_ENDPOINT", "http://127.0.0.1:6385")
client = Client.from_endpoint(endpoint)

wanted = Constraints(
    forbidden_traits=("CUSTOM_GPU",),
    properties=(
        property_constraint("cpus", Op.MIN, 16),
        property_constraint("memory_mb", Op.MIN, 65536),
    ),
    node_name="node-3",  # tried first when it qualifies
)
allocation = client.allocate("baremetal", constraints=wanted, timeout=120)
assert allocation.node_uuid is not None
print("reserved", client.get_node(allocation.node_uuid).name)
client.delete_allocation(allocation.ident)

# Nothing has 256 CPUs: explain says where the funnel runs dry.
huge = Constraints(properties=(property_constraint("cpus", Op.MIN, 256),))
doc = client.explain("baremetal", constraints=huge)
print(" > ".join(f"{s['step']} {s['count']}" for s in doc["funnel"]))
print("first empty:", doc["first_empty"])
try:
    client.allocate("baremetal", constraints=huge, timeout=120)
except exceptions.ClientError as exc:
    print("allocate failed:", type(exc).__name__)
