# The emerge image: the library, the CLI and Airflow in one environment.
FROM python:3.11-slim-bookworm

ENV PIP_NO_CACHE_DIR=1 PYTHONUNBUFFERED=1 \
    AIRFLOW_HOME=/opt/airflow \
    AIRFLOW__CORE__DAGS_FOLDER=/opt/emerge/dags \
    AIRFLOW__CORE__PLUGINS_FOLDER=/opt/emerge/plugins \
    AIRFLOW__CORE__LOAD_EXAMPLES=False

# gcc builds the C part of the dump scanner (setup.py); without it ingest is ~2x slower.
# g++ and cmake compile llama.cpp (llama-cpp-python[server], the local LLM server of
# requirements.txt: there is no binary wheel of it on PyPI)
RUN apt-get update \
    && apt-get install -y --no-install-recommends lbzip2 p7zip-full make gcc g++ cmake \
        libc6-dev \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/emerge
COPY requirements.txt constraints.txt pyproject.toml setup.py README.md ./
# llama.cpp for any x86-64 CPU, not the build machine's (-march=native can pick AMX or
# AVX-512 that the machine running the image lacks or refuses: SIGILL)
RUN pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu \
    && CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install -r requirements.txt -c constraints.txt
COPY emerge_lib ./emerge_lib
COPY dags ./dags
COPY plugins ./plugins
RUN pip install --no-deps . \
    && python -c "import sysconfig, pathlib; p = pathlib.Path(sysconfig.get_paths()['purelib']); (p / 'emerge_spark_home.pth').write_text(\"import os; os.environ.setdefault('SPARK_HOME', %r)\n\" % str(p / 'pyspark'))" \
    && python -c "import pyspark.sql.connect, great_expectations; import emerge_lib.cli; import emerge_lib.dumps._xmlfast"

ENTRYPOINT ["emerge"]
CMD ["--help"]
