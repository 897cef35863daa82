#!/usr/bin/env bash
# The wheels bench/infinitetalk_gpu.sh needs on a GPU machine that reaches no package index (run here, where pip works).
# The GPU image has python 3.12 with torch, accelerate, safetensors, tokenizers, huggingface-hub, psutil, numpy, pillow;
# it lacks these (or has an older transformers), so they travel in .whl/ (ignored by git; name it in the run's carry):
#   bench/fetch_gpu_wheels.sh            -> .whl/*.whl, about 60 MB (PyAV is most of it)
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
WHEELS=(diffusers==0.42.1 transformers==5.24.0 av==18.1.0 ftfy==6.3.1 wcwidth==0.9.4 pyloudnorm==0.2.0 importlib_metadata==10.2.0
        zipp==4.1.2 huggingface_hub==2.4.0 tokenizers==0.23.3 safetensors==0.8.0 typer==0.29.2 shellingham==1.5.4)
PLATFORMS=()
for n in 17 24 27 28 31 34; do PLATFORMS+=(--platform "manylinux_2_${n}_x86_64"); done
python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  "${PLATFORMS[@]}" --platform manylinux2014_x86_64 -d .whl "${WHEELS[@]}"
ls -1 .whl
