#!/usr/bin/env bash
# The second venv CI runs the Spark suite in: pyspark 4.x (classic and Connect, the
# `spark-pipelines` CLI) beside the main interpreter's pyspark 3.5. Created with the main
# interpreter's site packages visible (the same pinned pandas, pyarrow, numpy, pytest,
# duckdb, ... and ddflow), it adds only pyspark[connect,pipelines] and what it needs, and
# links in the ddflow the main interpreter imports (the installed wheel or the editable
# tree). Prints the venv's directory.
#
# The main interpreter's packages are seen through a .pth file naming its site directories,
# not through `venv --system-site-packages`: when the main interpreter is itself a venv,
# the latter would show the base installation's packages instead of the venv's.
#
#   VENV=$(.ci/venv_spark4.sh)          # PYTHON= picks the main interpreter
#
# Environment: DDFLOW_SPARK4_VENV (default .ci/venv-spark4, git-ignored).
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python}
VENV=${DDFLOW_SPARK4_VENV:-.ci/venv-spark4}
# The newest pyspark 4.x on PyPI when this was written; the whole tests/spark suite passes
# on it, classic and Connect.
PYSPARK4="4.3.0"

# A venv made with the system's site packages (as an older version of this script made it)
# is made again.
if [ -x "$VENV/bin/python" ] && grep -q "include-system-site-packages = true" "$VENV/pyvenv.cfg"; then
  rm -rf "$VENV"
fi
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV" >&2
fi
VENV=$(cd "$VENV" && pwd)
# The main interpreter's site directories, after the venv's own (as system site packages
# would be), each added with its own .pth files processed.
site=$("$VENV/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
"$PY" -c "
import site, sysconfig
dirs = dict.fromkeys([*site.getsitepackages(), sysconfig.get_paths()['purelib'],
                      sysconfig.get_paths()['platlib']])
print('import site; ' + '; '.join(f'site.addsitedir({d!r})' for d in dirs))
" >"$site/ddflow-main-interpreter.pth"
# Connect's client libraries pinned as resolved for 4.3.0; PyYAML (for spark-pipelines) comes
# with the main interpreter's mkdocs.
"$VENV/bin/python" -m pip install -q --disable-pip-version-check \
  "pyspark[connect,pipelines]==$PYSPARK4" "grpcio==1.85.3" "grpcio-status==1.85.3" \
  "protobuf==7.36.2" "googleapis-common-protos==1.76.0" "zstandard==0.25.0" >&2
# Before ddflow is installed (.ci/run makes this venv beside its build), the link waits for
# the next call.
if ddflow_dir=$("$PY" -c "import ddflow, os; print(os.path.dirname(ddflow.__file__))" 2>/dev/null); then
  ln -sfn "$ddflow_dir" "$site/ddflow"
  "$VENV/bin/python" -c "import ddflow, pyspark; print('ddflow', ddflow.__version__, 'from', \
    ddflow.__file__, 'pyspark', pyspark.__version__)" >&2
else
  echo "($PY cannot import ddflow yet: run this again once it is installed, to link it)" >&2
fi
echo "$VENV"
