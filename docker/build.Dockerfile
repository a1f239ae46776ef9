# The build image every kforge image starts from: Debian 12 (the platform scripts/setup.sh
# installs for), NVIDIA's CUDA 13.0 toolkit at /usr/local/cuda (what the development machines
# have), then the README's own steps: scripts/setup.sh (Debian packages, the venv with torch
# 2.11.0, helm) and scripts/build.sh (everything in build/). CI runs the same two scripts on
# every change (.ci/run); this file adds only the CUDA toolkit.
#
#   docker build -f docker/build.Dockerfile -t kforge/build .
FROM debian:12
ARG CUDA_KEYRING=https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/cuda-keyring_1.1-1_all.deb
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates curl && \
    curl -fsSL -o /tmp/cuda-keyring.deb "$CUDA_KEYRING" && dpkg -i /tmp/cuda-keyring.deb && \
    apt-get update && apt-get install -y --no-install-recommends cuda-toolkit-13-0 && \
    rm -rf /var/lib/apt/lists/* /tmp/cuda-keyring.deb
WORKDIR /src/kforge
COPY . .
RUN bash scripts/setup.sh && bash scripts/build.sh
