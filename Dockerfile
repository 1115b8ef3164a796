FROM python:3.11-slim
WORKDIR /opt/firstfault
COPY . .
# libhs (Vectorscan) and a compiler build catalog._linescan, the C line loop; the runtime keeps only the library.
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev libvectorscan-dev pkg-config \
 && pip install --no-cache-dir -c deploy/requirements.lock . \
 && apt-get purge -y gcc libc6-dev pkg-config && apt-get autoremove -y && rm -rf /var/lib/apt/lists/*
# the embedded mode's SQLite file (deploy/compose/embedded.yml mounts a volume here, which takes this ownership)
RUN mkdir -p /var/lib/firstfault && chown nobody /var/lib/firstfault
USER nobody
