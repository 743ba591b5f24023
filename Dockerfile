# The emerge image: the official Airflow 3 image plus emerge and its pinned requirements,
# for every Airflow container of docker-compose.yaml (and the Sail engine server).
FROM apache/airflow:3.3.2-python3.11

USER 0
# lbzip2 and p7zip read compressed dumps; gcc builds the C part of the dump scanner
# (setup.py; without it ingest is ~2x slower); libgomp1 is the OpenMP runtime of the
# prebuilt llama.cpp server (xllamacpp of requirements-demo.txt); curl serves the
# healthchecks.
# Debian's security updates move these versions: pinning them would break rebuilds.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends lbzip2 p7zip-full make gcc libc6-dev \
        libgomp1 curl \
    && rm -rf /var/lib/apt/lists/*

# the official image's airflow user (uid 50000)
USER 50000
ENV PIP_NO_CACHE_DIR=1 PYTHONUNBUFFERED=1 \
    AIRFLOW__CORE__DAGS_FOLDER=/opt/emerge/dags \
    AIRFLOW__CORE__LOAD_EXAMPLES=False
WORKDIR /opt/emerge
COPY --chown=50000:0 requirements.txt requirements-demo.txt constraints.txt pyproject.toml setup.py README.md ./
# torch first, the CPU build from PyTorch's index (PyPI's Linux torch is the CUDA build,
# about 2.7 GB to download); requirements-demo.txt holds the Celery provider of
# docker-compose.yaml's CeleryExecutor
RUN pip install --no-cache-dir torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu \
    && pip install --no-cache-dir -r requirements.txt \
       -c constraints.txt
COPY --chown=50000:0 emerge_lib ./emerge_lib
COPY --chown=50000:0 dags ./dags
COPY --chown=50000:0 plugins ./plugins
RUN pip install --no-cache-dir --no-deps . \
    && python -c "import sysconfig, pathlib; p = pathlib.Path(sysconfig.get_paths()['purelib']); (p / 'emerge_spark_home.pth').write_text(\"import os; os.environ.setdefault('SPARK_HOME', %r)\n\" % str(p / 'pyspark'))" \
    && python -c "import pyspark.sql.connect, great_expectations; import emerge_lib.cli; import emerge_lib.dumps._native, emerge_lib.dumps._crc32" \
    && airflow providers get emerge-tkgu
