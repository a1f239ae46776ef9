# kforge-gateway on Debian 12 slim with the shared libraries it links (the list in
# docker/runtime-packages.txt, checked against the built binary by tests/docker/), and its
# prompt templates.
#
#   docker build -f docker/gateway.Dockerfile --build-arg BUILD_IMAGE=kforge/build -t kforge/gateway .
ARG BUILD_IMAGE=kforge/build
FROM ${BUILD_IMAGE} AS build

FROM debian:12-slim
COPY docker/runtime-packages.txt /tmp/
RUN apt-get update && \
    apt-get install -y --no-install-recommends $(sed -n 's/^gateway: //p' /tmp/runtime-packages.txt) && \
    rm -rf /var/lib/apt/lists/* /tmp/runtime-packages.txt
COPY --from=build /src/kforge/build/llm_gateway/kforge-gateway /usr/local/bin/
USER 65534:65534
EXPOSE 50061 9465
ENTRYPOINT ["/usr/local/bin/kforge-gateway"]
