import json
import subprocess
from pathlib import Path

HERE = Path(__file__).parent
rows = [json.loads(p.read_text()) for p in sorted((HERE / "results").glob("*.json"))]
with open(HERE / "summary.json", "w") as fh:
    json.dump(rows, fh)
subprocess.run(["pip", "install", "tabulate"], check=True)
