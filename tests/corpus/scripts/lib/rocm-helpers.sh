# shellcheck shell=bash
# helpers shared by the launch scripts
SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
enable_aiter_mla() {
  sed -i 's/VLLM_ROCM_USE_AITER_MLA", "0"/VLLM_ROCM_USE_AITER_MLA", "1"/' "$SITE/vllm/envs.py"
}
