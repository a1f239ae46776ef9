# kforge-gateway on Debian 12 slim with the shared libraries it links (the list in
# docker/runtime-packages.txt, checked against the built binaries by tests/docker/), its
# prompt templates, and the kforge CLI (the chart's probes run `kforge health`).
#
#   docker build -f docker/gateway.Dockerfile --build-arg BUILD_IMAGE=kforge/build -t kforge/gateway .
ARG BUILD_IMAGE=kforge/build
FROM ${BUILD_IMAGE} AS build

FROM debian:12-slim
COPY docker/runtime-packages.txt /tmp/
RUN apt-get update && \
    apt-get install -y --no-install-recommends $(sed -n 's/^gateway: //p' /tmp/runtime-packages.txt) && \
    rm -rf /var/lib/apt/lists/* /tmp/runtime-packages.txt
# The CLI too: with TLS, the chart's probes run `kforge health` in the container.
COPY --from=build /src/kforge/build/llm_gateway/kforge-gateway /src/kforge/build/cli/kforge /usr/local/bin/
USER 65534:65534
EXPOSE 50061 9465
ENTRYPOINT ["/usr/local/bin/kforge-gateway"]
