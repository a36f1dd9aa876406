def capture_sizes(max_batch):
    return [1, 2, 4, 8, 16, 32][:max_batch]
