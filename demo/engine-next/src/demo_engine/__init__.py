"""demo_engine: a stand-in inference engine.

Importing it probes for an accelerator and aborts without one, as some real engines do; set
DEMO_ENGINE_ALLOW_CPU=1 to import it anyway.
"""

import os

__version__ = "0.4.1"

if os.environ.get("DEMO_ENGINE_ALLOW_CPU") != "1":
    raise RuntimeError("demo_engine: no accelerator found (set DEMO_ENGINE_ALLOW_CPU=1)")
