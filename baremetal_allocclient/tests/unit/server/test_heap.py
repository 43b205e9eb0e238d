"""The serving process leaves what start-up made out of full garbage
collections (its large answers: ``functional/server/test_large_answers``).
"""

from __future__ import annotations

import gc

import testtools

from baremetal_allocclient.server import heap


def _in_oldest_generation(obj: object) -> bool:
    return any(o is obj for o in gc.get_objects(generation=2))


class StartUpHeapTests(testtools.TestCase):

    def test_start_up_objects_are_left_out_of_full_collections(self) -> None:
        self.addCleanup(gc.unfreeze)
        made_at_start_up = [[n] for n in range(5000)]  # (lists are tracked)
        gc.collect()  # every survivor is now in the oldest generation
        self.assertTrue(_in_oldest_generation(made_at_start_up[0]))

        heap.start_up_over()

        self.assertGreaterEqual(gc.get_freeze_count(), len(made_at_start_up))
        self.assertFalse(_in_oldest_generation(made_at_start_up[0]))
        self.assertFalse(_in_oldest_generation(made_at_start_up))
        # Made afterwards: collected as before.
        later = [[n] for n in range(10)]
        gc.collect()
        self.assertTrue(_in_oldest_generation(later[0]))
