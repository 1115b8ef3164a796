FROM python:3.11-slim
WORKDIR /opt/firstfault
COPY . .
RUN pip install --no-cache-dir .
USER nobody
