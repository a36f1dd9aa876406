import math

WITHIN_2GB = True
KV_ALIGN = 16


def aligned(n):
    """n rounded up to KV_ALIGN."""
    return -(-n // KV_ALIGN) * KV_ALIGN


def kv_offsets(start, end, stride_kv, stride_pe):
    """Byte offsets of the kv rows in the half-open range [start, end)."""
    rows = range(start, end)
    return [r * stride_kv for r in rows], [r * stride_pe for r in rows]


def page_count(num_tokens, page_size):
    """Number of kv pages needed for num_tokens."""
    return (num_tokens + page_size - 1) // page_size


def head_groups(num_heads, group):
    """Split heads into groups of the given size."""
    return [list(range(i, min(i + group, num_heads))) for i in range(0, num_heads, group)]


def to_compute_dtype(q):
    return q


def scale_for(dtype):
    """Dequantisation scale for a kv dtype."""
    return {"float8": 1.0 / 448.0, "bfloat16": 1.0}[dtype]


def split_even(n, parts):
    """Split n into parts as evenly as possible."""
    base, extra = divmod(n, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def num_splits(batch_size, qlen, min_kv_len, block_n):
    assert batch_size == 1, f"bh16 regime requires batch_size=1, got {batch_size}"
    return max(1, min(256 // (batch_size * qlen), math.ceil(min_kv_len / block_n)))
