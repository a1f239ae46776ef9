# kforge-coordinator on Debian 12 slim with the shared libraries it links (the list in
# docker/runtime-packages.txt, checked against the built binary by tests/docker/), python3
# (the coordinator compile-checks submitted tasks with it, --task_python) and the kforge CLI
# (the chart's probes run `kforge health`).
#
#   docker build -f docker/coordinator.Dockerfile --build-arg BUILD_IMAGE=kforge/build -t kforge/coordinator .
ARG BUILD_IMAGE=kforge/build
FROM ${BUILD_IMAGE} AS build

FROM debian:12-slim
COPY docker/runtime-packages.txt /tmp/
RUN apt-get update && \
    apt-get install -y --no-install-recommends $(sed -n 's/^coordinator: //p' /tmp/runtime-packages.txt) && \
    rm -rf /var/lib/apt/lists/* /tmp/runtime-packages.txt
COPY --from=build /src/kforge/build/coordinator/kforge-coordinator /src/kforge/build/cli/kforge /usr/local/bin/
USER 65534:65534
EXPOSE 50051 9464
ENTRYPOINT ["/usr/local/bin/kforge-coordinator"]
