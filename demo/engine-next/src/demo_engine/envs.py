import os

USE_FAST_DECODE = os.environ.get("DEMO_USE_FAST_DECODE", "0") == "1"
MAX_BATCH = int(os.environ.get("DEMO_MAX_BATCH", "256"))
KV_CACHE_DTYPE = os.environ.get("DEMO_KV_CACHE_DTYPE", "auto")
ASM_PADDING = os.environ.get("DEMO_ASM_PADDING", "none")
