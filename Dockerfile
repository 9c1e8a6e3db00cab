# rocketmq-py: one image for the NameServer and the Broker.
#   docker build -t rocketmq-py .
#   docker run --network host rocketmq-py bin/mqnamesrv
#   docker run --network host -v "$PWD/conf:/opt/rocketmq-py/conf" rocketmq-py bin/mqbroker -c conf/broker.conf
# Stage 1: compile the optional C twins (common/speedups.py, common/fsync_worker.py, common/stats_counters.py;
# the slim image has no compiler).
FROM python:3.11-slim AS speedups
WORKDIR /src
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/* \
 && pip install --no-cache-dir "setuptools>=68"
COPY setup.py pyproject.toml README.md ./
COPY common ./common
RUN python setup.py build_ext --inplace

FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    APP=/opt/rocketmq-py
WORKDIR ${APP}

# Dependencies first, so code changes do not rebuild this layer.
COPY pyproject.toml README.md ./
RUN python -m venv .venv \
 && .venv/bin/pip install --upgrade pip \
 && .venv/bin/pip install uvloop construct pyyaml prometheus-client orjson lark

COPY common ./common
COPY --from=speedups /src/common/_speedups*.so /src/common/_fsync_worker*.so /src/common/_stats_counters*.so ./common/
COPY remoting ./remoting
COPY dledger ./dledger
COPY store ./store
COPY broker ./broker
COPY namesrv ./namesrv
COPY client ./client
COPY tools ./tools
COPY conf ./conf
COPY bin ./bin
RUN .venv/bin/pip install --no-deps . && chmod +x bin/* \
 && .venv/bin/python -m compileall -q common remoting dledger store broker namesrv client tools \
 && .venv/bin/python -c "from common import fsync_worker, speedups, stats_counters; \
    assert speedups.IS_COMPILED and fsync_worker.IS_COMPILED and stats_counters.IS_COMPILED"

# NameServer, broker (fast port = listen-2, HA = listen+1), DLedger peers.
EXPOSE 9876 10909 10911 10912 30911 30921 30931 40911 40912 40913
VOLUME ["/opt/rocketmq-py/run"]
STOPSIGNAL SIGTERM
CMD ["bin/mqnamesrv"]
