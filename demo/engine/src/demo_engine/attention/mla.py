import math

WITHIN_2GB = True


def kv_offsets(start, end, stride_kv, stride_pe):
    """Byte offsets of the kv rows in [start, end)."""
    rows = range(start, end)
    return [r * stride_kv for r in rows], [r * stride_pe for r in rows]


def to_compute_dtype(q):
    return q


def num_splits(batch_size, qlen, min_kv_len, block_n):
    assert batch_size == 1, f"bh16 regime requires batch_size=1, got {batch_size}"
    return max(1, min(256 // (batch_size * qlen), math.ceil(min_kv_len / block_n)))
