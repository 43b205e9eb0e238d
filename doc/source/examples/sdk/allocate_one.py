"""Reserve one node with a GPU, look at it, then release it."""

import os

from baremetal_allocclient.v1 import Client

endpoint = os.environ.get("OS_ENDPOINT", "http://127.0.0.1:6385")
client = Client.from_endpoint(endpoint)

# Create the allocation and wait until it is active (120 s at most).
allocation = client.allocate(
    "baremetal", traits=["CUSTOM_GPU"], name="web-1", timeout=120
)
# An active allocation always has a node.
assert allocation.node_uuid is not None
try:
    node = client.get_node(allocation.node_uuid)
    print(f"{allocation.name} reserved {node.name} ({node.uuid})")
    print(f"instance_uuid is the allocation: "
          f"{node.instance_uuid == allocation.uuid}")
finally:
    client.delete_allocation(allocation.ident)
print("released")
