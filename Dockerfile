# Sync Gateway in a container: a build stage with the Swift toolchain makes a self-contained
# binary (the Swift runtime linked in), and a slim Debian stage runs it as a non-root user.
#   docker build -t sync-gateway .
#   docker run -v gateway-state:/var/lib/sync-gateway -p 8787:8787 -e GATEWAY_TOKEN=… sync-gateway
# Mount your own config at /etc/sync-gateway/config.yaml; relative paths in it resolve against
# /etc/sync-gateway, and its state_dir should be /var/lib/sync-gateway (the volume).

ARG SWIFT_VERSION=6.3.1
FROM swift:${SWIFT_VERSION}-bookworm AS build
WORKDIR /src
# The manifest first, so the dependencies resolve in a layer of their own.
COPY Package.swift ./
RUN swift package resolve
COPY . .
RUN swift build -c release --static-swift-stdlib --product gateway \
    && install -D -m 0755 .build/release/gateway /out/gateway \
    && strip /out/gateway

FROM debian:bookworm-slim
# What the binary links besides the C library: SQLite, zlib, the C++ runtime. Versions are those
# of the Debian release the image is built on (pinning them breaks every point release).
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates libsqlite3-0 zlib1g libstdc++6 tzdata \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 sync-gateway \
    && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/sync-gateway --shell /usr/sbin/nologin sync-gateway \
    && install -d -o sync-gateway -g sync-gateway -m 0750 /var/lib/sync-gateway \
    && install -d -m 0755 /etc/sync-gateway
COPY --from=build /out/gateway /usr/local/bin/gateway
COPY examples/service/container-config.yaml /etc/sync-gateway/config.yaml
USER 10001:10001
WORKDIR /var/lib/sync-gateway
VOLUME ["/var/lib/sync-gateway"]
EXPOSE 8787
ENTRYPOINT ["/usr/local/bin/gateway"]
CMD ["run", "--config", "/etc/sync-gateway/config.yaml"]
