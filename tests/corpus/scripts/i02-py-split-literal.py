import sysconfig
from pathlib import Path

site = Path(sysconfig.get_paths()["purelib"])
target = site / (
    "sglang/srt/layers/moe/fused_moe_triton/configs/"
    "E=256,N=256,device_name=AMD_Instinct_MI300X.json"
)
target.write_text('{"1": {"BLOCK_SIZE_M": 16}}')
