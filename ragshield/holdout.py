"""The uniform random slice of a dataset kept apart from fitting, so that the policy's
promise can be checked on labels nobody chose (the value queue hands the rest out by what
they teach, which biases them). Membership is a hash of the sample id: the same slice in
every process and run, with no table to keep."""

from __future__ import annotations

import zlib

HOLDOUT_SHARE = 0.2  # the default share: enough labels to check a promise, few withheld


def in_holdout(sample_id: str, share: float) -> bool:
    """Whether the dataset's sample `sample_id` (its own id) lies in the slice of `share`."""
    return zlib.crc32(f"holdout:{sample_id}".encode()) < share * 2**32
