# kforge-worker with kforge-eval on the CUDA build image: evaluations need what the build
# has (the CUDA 13.0 toolkit for NVRTC and load_inline's nvcc, g++, the venv's torch 2.11.0
# with its LibTorch, Debian's libpython3.11 the engine embeds). The GPU driver comes from the
# node (NVIDIA container toolkit). The worker runs as root so that each evaluation can be
# dropped to the sandbox user (helm/README.md, "Worker security context").
#
#   docker build -f docker/worker.Dockerfile --build-arg BUILD_IMAGE=kforge/build -t kforge/worker .
ARG BUILD_IMAGE=kforge/build
FROM ${BUILD_IMAGE}
# The build tree stays where it was built: kforge-eval's RPATH names the venv's LibTorch and
# its dialects use files of the build (precompiled header, pre-roll kernel). The compiler
# cache goes; the sandbox user must read the rest.
RUN rm -rf .cache/ccache && chmod -R a+rX /src/kforge
ENV NVIDIA_VISIBLE_DEVICES=all NVIDIA_DRIVER_CAPABILITIES=compute,utility
EXPOSE 50071 9466
ENTRYPOINT ["/src/kforge/build/gpu_worker/kforge-worker"]
