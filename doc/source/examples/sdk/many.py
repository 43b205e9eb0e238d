"""Ask for five nodes at once and keep whatever could be reserved."""

import os

from baremetal_allocclient.v1 import Client

endpoint = os.environ.get("OS_ENDPOINT", "http://127.0.0.1:6385")
client = Client.from_endpoint(endpoint)

created = [client.create_allocation("baremetal") for _ in range(5)]
# One list request per poll round, however many allocations are pending.
results = client.wait_for_allocations(
    created, timeout=120, raise_on_error=False
)
active = [a for a in results if a.state == "active"]
failed = [a for a in results if a.state == "error"]
print(f"{len(active)} active, {len(failed)} failed")
for allocation in failed:
    print(f"  {allocation.uuid}: {allocation.last_error}")

# Nothing may be left behind: failed allocations are records too.
for allocation in results:
    client.delete_allocation(allocation.ident)
remaining = list(client.list_allocations(resource_class="baremetal"))
print(f"{len(remaining)} allocations left")
