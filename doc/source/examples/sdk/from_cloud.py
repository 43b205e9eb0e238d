"""Build a client from clouds.yaml (or OS_* variables) and list."""

from baremetal_allocclient.v1 import Client

client = Client.from_cloud("local")  # the "local" entry of clouds.yaml
print(f"API version {client.api_version[0]}.{client.api_version[1]}")
for allocation in client.list_allocations(state="active",
                                          sort_key="created_at"):
    print(allocation.uuid, allocation.node_uuid)
