from demo_engine import envs


def pick_batch(requests):
    """Take the next batch of requests, oldest first."""
    limit = min(envs.MAX_BATCH, 512)
    return list(requests)[:limit]


def capture_sizes(max_batch):
    """Batch sizes for which a graph is captured."""
    return [1, 2, 4, 8, 16, 32, 64][: max_batch]


def supports_full_graph(backend, num_decode_tokens):
    """Whether the backend can run the whole decode step inside one captured graph."""
    if backend == "triton_mla":
        return num_decode_tokens == 1
    return False
